"""The HTTP endpoint the Firestore emulator delivers to (its ``--functions_emulator``).

It only decodes, classifies and hands over: it answers 200 at once, because the emulator delivers
one event at a time and a slow answer would serialize every function behind it.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.events.cloud.firestore import DocumentEventData

from emulator.delivery import Delivery
from functions._events import document_path

log = logging.getLogger(__name__)

Sink = Callable[[Delivery], None]
_ROUTE = re.compile(r"^/functions/projects/(?P<project>[^/]+)/triggers/(?P<trigger>[^/?]+)")


def source_for(project: str) -> str:
    return f"//firestore.googleapis.com/projects/{project}/databases/(default)"


def decode_body(body: bytes) -> bytes:
    """The emulator sends base64 text of the protobuf; tolerate raw bytes should that change."""
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return body


def classify(event_type: str, raw: bytes) -> tuple[str | None, str | None]:
    """(drop reason or None, document path) for what production would never deliver.

    The documents are compared as stored (their protobuf), not decoded: decoding both of
    every event was a quarter of the runtime process's CPU."""
    event = _EVENT_DATA()
    event.ParseFromString(raw)
    has_after, has_before = event.HasField("value"), event.HasField("old_value")
    if not (has_after or has_before):
        return "phantom", None
    name = (event.value if has_after else event.old_value).name
    path = document_path(name) if name else None
    updated = event_type.endswith((".updated", ".written"))
    if updated and has_after and has_before and _stored(event.old_value) == _stored(event.value):
        return "no-op update", path
    return None, path


_EVENT_DATA = DocumentEventData.pb()


def _stored(document: Any) -> bytes:
    """The document's fields (deterministic bytes: maps in key order), its times left out."""
    document.ClearField("update_time")
    document.ClearField("create_time")
    return bytes(document.SerializeToString(deterministic=True))


def to_delivery(project: str, trigger: str, headers: dict[str, str], body: bytes) -> Delivery:
    """Turn one emulator request into a binary-mode CloudEvent delivery for ``trigger``."""
    raw = decode_body(body)
    ce = {k.lower(): v for k, v in headers.items() if k.lower().startswith("ce-")}
    ce["ce-source"] = source_for(project)
    ce["content-type"] = "application/protobuf"
    try:
        drop, path = classify(ce.get("ce-type", ""), raw)
    except Exception as error:
        drop, path = f"undecodable ({error})", None
    subject = path or ce.get("ce-document") or ce.get("ce-subject", "")
    return Delivery(trigger, subject, ce.get("ce-id", ""), ce, raw, drop_reason=drop)


class Receiver:
    """Threaded HTTP server routing each project's events to the sink attached for it."""

    def __init__(self, port: int = 0) -> None:
        self._sinks: dict[str, Sink] = {}
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                receiver.handle(self.path, dict(self.headers.items()), body)
                self.send_response(HTTPStatus.OK)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                log.debug("receiver: " + format, *args)

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="trigger-receiver", daemon=True
        )

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():  # shutdown() would wait forever for a loop never started
            self._server.shutdown()
        self._server.server_close()

    def attach(self, project: str, sink: Sink) -> None:
        with self._lock:
            if project in self._sinks:
                raise RuntimeError(f"a runtime is already attached for project {project!r}")
            self._sinks[project] = sink

    def detach(self, project: str) -> None:
        with self._lock:
            self._sinks.pop(project, None)

    def handle(self, path: str, headers: dict[str, str], body: bytes) -> None:
        match = _ROUTE.match(path)
        if match is None:
            log.warning("receiver: unexpected request %s", path)
            return
        project, trigger = match["project"], match["trigger"]
        with self._lock:
            sink = self._sinks.get(project)
        if sink is None:
            log.debug("receiver: no runtime for project %s, dropped %s", project, trigger)
            return
        try:
            sink(to_delivery(project, trigger, headers, body))
        except Exception:
            log.exception("receiver: failed to hand over %s for %s", trigger, project)
