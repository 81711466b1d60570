"""The Firestore emulator's HTTP control endpoints (triggers, data reset, rules) for one project."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from functions.registry import FirestoreTrigger

DATABASE = "(default)"


class FirestoreAdmin:
    def __init__(self, host: str, project: str) -> None:
        self._base = f"http://{host}/emulator/v1/projects/{project}"
        self._project = project

    def _call(self, method: str, url: str, body: Any = None) -> None:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            # generous: a cold emulator compiling rules or importing data on a loaded machine
            # took over 30 s to answer (load average 36)
            with urllib.request.urlopen(request, timeout=120) as response:
                response.read()
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")
            raise RuntimeError(f"{method} {url} -> {error.code}: {detail}") from None

    def register_trigger(self, trigger_id: str, trigger: FirestoreTrigger) -> None:
        """Register (or replace) a v2 Eventarc trigger; the emulator POSTs matching events."""
        query = urllib.parse.urlencode({"eventarcTriggerId": trigger_id})
        self._call(
            "POST",
            f"{self._base}/eventarcTrigger?{query}",
            {
                "eventType": trigger.event_type,
                "database": DATABASE,
                "namespace": DATABASE,
                "document": {"value": trigger.document, "matchType": "PATH_PATTERN"},
            },
        )

    def reset(self) -> None:
        """Delete every document of the project (fires delete events: pause delivery first)."""
        self._call("DELETE", f"{self._base}/databases/{urllib.parse.quote(DATABASE)}/documents")

    def export(self, directory: Path) -> None:
        """Write every project's documents under ``directory`` (a new timestamped folder)."""
        database = f"projects/{self._project}/databases/{DATABASE}"
        body = {"database": database, "export_directory": str(directory)}
        self._call("POST", f"{self._base}:export", body)

    def put_rules(self, source: str) -> None:
        files = [{"name": "firestore.rules", "content": source}]
        self._call("PUT", f"{self._base}:securityRules", {"rules": {"files": files}})
