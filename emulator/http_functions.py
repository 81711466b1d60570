"""The registry's HTTP functions on a local port, each at ``/{name}`` as Cloud Functions serves
them (``https://REGION-PROJECT.cloudfunctions.net/{name}/...``): the REST API locally is
``http://127.0.0.1:PORT/api/v1``.

Each function is its own functions-framework app (``create_app`` with the HTTP signature, as
Cloud Run starts it), mounted under its name; a threaded werkzeug server answers in this process,
which has the runtime's environment (the emulators' hosts).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import functions_framework
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Response

from emulator.invoker import DEFAULT_SOURCE, REPO_ROOT
from functions.registry import FunctionSpec, HttpTrigger

HOST = "127.0.0.1"


def http_specs(registry: Sequence[FunctionSpec]) -> list[FunctionSpec]:
    return [spec for spec in registry if isinstance(spec.trigger, HttpTrigger)]


class HttpFunctions:
    def __init__(
        self, specs: Sequence[FunctionSpec], source: str | Path | None = None, port: int = 0
    ) -> None:
        path = Path(source) if source else DEFAULT_SOURCE
        self.source = path if path.is_absolute() else REPO_ROOT / path
        self.names = [spec.name for spec in specs]
        self.port = port
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> HttpFunctions:
        mounts = {
            f"/{name}": functions_framework.create_app(
                target=name, source=str(self.source), signature_type="http"
            )
            for name in self.names
        }
        app = DispatcherMiddleware(Response("no such function", status=404), mounts)
        self._server = make_server(HOST, self.port, app, threaded=True)
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def url(self, name: str) -> str:
        return f"http://{HOST}:{self.port}/{name}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
