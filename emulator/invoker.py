"""Running a function in-process through functions-framework, exactly as Cloud Run would call it.

Each function gets its own Flask app from ``functions_framework.create_app`` (built once), and a
delivery is one POST through its test client: no port, but the real CloudEvent parsing path.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import flask
import functions_framework

from emulator import metering as metering  # registers the client's metering for local runs
from emulator.delivery import Delivery

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO_ROOT / "functions" / "main.py"


class Invoker:
    def __init__(self, functions: Iterable[str], source: str | Path | None = None) -> None:
        """``functions``: the registry's names, each an entry point of ``source``."""
        path = Path(source) if source else DEFAULT_SOURCE
        self.source = path if path.is_absolute() else REPO_ROOT / path
        self._apps: dict[str, flask.Flask] = {}
        self._errors = threading.local()
        for name in functions:
            self._apps[name] = self._build(name)

    def _build(self, target: str) -> flask.Flask:
        # create_app re-executes the source module each time; that is cheap and keeps us on the
        # framework's public entry point.
        app = functions_framework.create_app(
            target=target, source=str(self.source), signature_type="cloudevent"
        )
        # Flask turns a crash into an opaque 500; keep the real traceback for the delivery log
        # and let our log line replace Flask's own.
        flask.got_request_exception.connect(self._on_exception, app, weak=False)
        app.logger.disabled = True
        return app

    def _on_exception(self, sender: Any, exception: BaseException, **_: Any) -> None:
        self._errors.last = "".join(traceback.format_exception(exception)).rstrip()

    def invoke(self, delivery: Delivery) -> str | None:
        """Run the function; None on success, else the error (traceback or HTTP status)."""
        return self.call(delivery.function, delivery.body, delivery.headers)

    def call(self, function: str, body: bytes, headers: dict[str, str]) -> str | None:
        """``invoke`` from a delivery's parts (what a worker process receives)."""
        self._errors.last = None
        response = self._apps[function].test_client().post("/", data=body, headers=headers)
        if 200 <= response.status_code < 300:
            return None
        return self._errors.last or f"HTTP {response.status_code}: {response.get_data(True)}"
