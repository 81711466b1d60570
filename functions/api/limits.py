"""Deliberate Lab's rate limit on the REST API: each key (else each address) may make
``DLAB_API_RATE_LIMIT`` requests per ``DLAB_API_RATE_WINDOW_SECONDS`` window, per instance, as
express-rate-limit's memory store counts them; past it, 429 with its message. The window's
counts are sent as the ``RateLimit-*`` headers on every answer, as Deliberate Lab sends them."""

from __future__ import annotations

import dataclasses
import math
import threading
import time

from pydantic import Field

from shared.settings import DlabSettings

MESSAGE = "Too many requests from this API key, please try again later."


class ApiSettings(DlabSettings):
    """- ``DLAB_API_RATE_LIMIT`` (100; 0: none): requests per key and window, per instance.
    - ``DLAB_API_RATE_WINDOW_SECONDS`` (900): the window."""

    api_rate_limit: int = Field(default=100, ge=0)
    api_rate_window_seconds: float = Field(default=900, gt=0)


@dataclasses.dataclass(frozen=True)
class Count:
    allowed: bool
    headers: dict[str, str]


_windows: dict[str, tuple[float, int]] = {}
_lock = threading.Lock()


def count(caller: str) -> Count:
    """Count one request of ``caller`` (its key, or its address) in its window."""
    settings = ApiSettings()
    if not settings.api_rate_limit:
        return Count(True, {})
    now = time.monotonic()
    with _lock:
        start, used = _windows.get(caller, (now, 0))
        if now - start >= settings.api_rate_window_seconds:
            start, used = now, 0
        used += 1
        _windows[caller] = (start, used)
    reset = math.ceil(start + settings.api_rate_window_seconds - now)
    headers = {
        "RateLimit-Policy": f"{settings.api_rate_limit};w={int(settings.api_rate_window_seconds)}",
        "RateLimit-Limit": str(settings.api_rate_limit),
        "RateLimit-Remaining": str(max(0, settings.api_rate_limit - used)),
        "RateLimit-Reset": str(reset),
    }
    return Count(used <= settings.api_rate_limit, headers)
