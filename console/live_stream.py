"""The live views' server-sent event stream, shared by every view that pushes a state: one
``state`` event now and one per change, a comment line while nothing changes (so proxies keep
the connection), ended when the console stops."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from flask import Response, current_app, stream_with_context
from pydantic import BaseModel

POLL_S = 0.5
HEARTBEAT_S = 15.0


def state_events(read: Callable[[], BaseModel | None], poll_s: float = POLL_S) -> Response:
    """``read`` returns the view's state (None: nothing there, sent as ``null``); it is called
    every ``poll_s`` seconds and sent when its JSON changed."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]

    def stream() -> Iterator[str]:
        last, quiet_since = "", time.monotonic()
        while not app.extensions.get("dlab_stopping"):
            found = read()
            current = found.model_dump_json() if found is not None else "null"
            if current != last:
                last, quiet_since = current, time.monotonic()
                yield f"event: state\ndata: {current}\n\n"
            elif time.monotonic() - quiet_since > HEARTBEAT_S:
                quiet_since = time.monotonic()
                yield ": still here\n\n"
            time.sleep(poll_s)

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Response(stream_with_context(stream()), mimetype="text/event-stream", headers=headers)
