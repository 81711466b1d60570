"""Local HTTP fakes of model providers: real sockets, real protocols, scripted replies.

A fake pops one scripted Step per request (or repeats its default) and records every request, so
tests drive the production clients unchanged and assert on what went over the wire.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclasses.dataclass(frozen=True)
class Step:
    """One scripted answer: HTTP status, exact body bytes, and a delay before answering."""

    status: int = 200
    body: bytes = b"{}"
    delay_s: float = 0.0
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    """Extra response headers (``retry-after``, a request id)."""


@dataclasses.dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: Any
    """Parsed JSON, or the text when it is not JSON."""


def json_step(
    payload: Any, status: int = 200, delay_s: float = 0.0, headers: dict[str, str] | None = None
) -> Step:
    return Step(
        status, json.dumps(payload).encode(), delay_s, headers=tuple((headers or {}).items())
    )


def malformed() -> Step:
    """A 200 whose body is cut off mid-JSON, as from a broken proxy."""
    return Step(200, b'{"candidates": [{"content": ', content_type="application/json")


def slow(step: Step, delay_s: float) -> Step:
    return dataclasses.replace(step, delay_s=delay_s)


class FakeServer:
    """A ThreadingHTTPServer on 127.0.0.1 (port 0); use as a context manager."""

    def __init__(self, default: Step, responder: Callable[[Recorded], Step] | None = None) -> None:
        self.default = default
        self.responder = responder
        """Answers from the request itself when nothing is scripted (e.g. schema-valid JSON)."""
        self.requests: list[Recorded] = []
        self._queue: collections.deque[Step] = collections.deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- scripting -------------------------------------------------------------------------
    def push(self, *steps: Step) -> None:
        with self._lock:
            self._queue.extend(steps)

    def route(self, method: str, path: str, headers: dict[str, str], body: Any) -> Step | None:
        """A protocol-level answer (404, 401) before the script is consulted; None to go on."""
        return None

    def _next(self, request: Recorded) -> Step:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.responder(request) if self.responder else self.default

    @property
    def url(self) -> str:
        assert self._server is not None, "start the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # --- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> FakeServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                fake._handle(self)

            def do_GET(self) -> None:
                fake._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()  # wakes handlers that are still "thinking"
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        text = handler.rfile.read(length).decode() if length else ""
        try:
            body: Any = json.loads(text) if text else None
        except ValueError:
            body = text
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self.requests.append(Recorded(handler.command, handler.path, headers, body))
        step = self.route(handler.command, handler.path, headers, body) or self._next(
            self.requests[-1]
        )
        if step.delay_s and self._closing.wait(step.delay_s):
            return
        try:
            handler.send_response(step.status)
            handler.send_header("Content-Type", step.content_type)
            handler.send_header("Content-Length", str(len(step.body)))
            for name, value in step.headers:
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(step.body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before we answered
