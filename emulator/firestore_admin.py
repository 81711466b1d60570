"""The Firestore emulator's HTTP control endpoints (triggers, data reset, rules) for one project."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from http import HTTPStatus
from pathlib import Path
from typing import Any

from functions.registry import FirestoreTrigger

DATABASE = "(default)"
ADMIN_TIMEOUT_S = 120.0
"""Generous: a cold emulator compiling rules or importing data on a loaded machine took over 30 s
to answer (load average 36)."""


class AdminError(RuntimeError):
    """The emulator answered an admin request with an HTTP error."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class FirestoreAdmin:
    def __init__(self, host: str, project: str) -> None:
        self.host = host
        self._base = f"http://{host}/emulator/v1/projects/{project}"
        self._documents = f"http://{host}/v1/projects/{project}/databases/{DATABASE}/documents"
        self._project = project

    def _call(
        self, method: str, url: str, body: Any = None, timeout: float = ADMIN_TIMEOUT_S
    ) -> None:
        """The request; an HTTP error raises AdminError with the emulator's answer, an
        emulator that does not answer raises OSError (``urllib.error.URLError``)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", "Bearer owner")  # the emulator's rules bypass
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                response.read()
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")
            raise AdminError(f"{method} {url} -> {error.code}: {detail}", error.code) from None

    def document_exists(self, path: str, timeout: float) -> bool:
        """Whether the document exists (REST: no gRPC channel waiting out its reconnect
        backoff after an emulator restart); OSError if the emulator does not answer."""
        try:
            self._call("GET", f"{self._documents}/{urllib.parse.quote(path)}", timeout=timeout)
        except AdminError as error:
            if error.status == HTTPStatus.NOT_FOUND:
                return False
            raise
        return True

    def put_document(self, path: str, fields: dict[str, float], timeout: float) -> None:
        """Write a document of number fields (REST, as ``document_exists``)."""
        body = {"fields": {name: {"doubleValue": value} for name, value in fields.items()}}
        self._call("PATCH", f"{self._documents}/{urllib.parse.quote(path)}", body, timeout)

    def delete_document(self, path: str, timeout: float) -> None:
        self._call("DELETE", f"{self._documents}/{urllib.parse.quote(path)}", timeout=timeout)

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
