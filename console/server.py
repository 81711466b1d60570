"""Serving the console in a background thread of ``make up`` (Werkzeug's threaded WSGI server:
the live view keeps one streaming request open per page)."""

from __future__ import annotations

import logging
import threading

from werkzeug.serving import BaseWSGIServer, make_server

from console.app import create_app


class ConsoleServer:
    def __init__(self, project: str, port: int, host: str = "127.0.0.1") -> None:
        self.app = create_app(project)
        # one line per request (the live view's too) would drown make up's own live log
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self._server: BaseWSGIServer = make_server(host, port, self.app, threaded=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="console", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://{self._server.host}:{self._server.port}"

    def __enter__(self) -> ConsoleServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.app.extensions["dlab_stopping"] = True  # ends the live views' event streams
        self._server.shutdown()
        self._server.server_close()
