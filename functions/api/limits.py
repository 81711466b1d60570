"""The REST API's limits (docs/API.md, docs/SECURITY.md).

- Deliberate Lab's rate limit: each key (else each client address) may make
  ``DLAB_API_RATE_LIMIT`` requests per ``DLAB_API_RATE_WINDOW_SECONDS`` window, per instance, as
  express-rate-limit's memory store counts them; past it, 429 with its message and
  ``Retry-After``. The window's counts are sent as the ``RateLimit-*`` headers on every answer.
  A key is counted by its key id (the first 8 hex digits of its SHA-256), not its text.
- Guessing: failed authentications are counted per client address and per key id; past
  ``DLAB_API_AUTH_FAILURES`` (per address) or ``DLAB_API_AUTH_FAILURES_PER_KEY`` (per key id)
  in a window, every request of that client or key id is answered 429 with ``Retry-After``
  before its key is checked.
- Memory: each table keeps at most ``MAX_ENTRIES`` counters, expired ones dropped first, then
  the least recently used.
- Sizes: the body (413 past ``DLAB_API_MAX_BODY_BYTES``, refused from its ``Content-Length``
  before it is read), the JSON's depth, stages, agents and cohorts.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import os
import threading
import time

import flask
from pydantic import Field

from shared.settings import DlabSettings

MESSAGE = "Too many requests from this API key, please try again later."
GUESSING = "Too many failed authentications, please try again later."
MAX_ENTRIES = 10_000
MAX_ID_BYTES = 256
"""The longest id the API takes (in a URL or a template): a stage id is also a field name
in other documents, which Firestore limits too."""


class ApiSettings(DlabSettings):
    """- ``DLAB_API_RATE_LIMIT`` (100; 0: none): requests per key and window, per instance.
    - ``DLAB_API_RATE_WINDOW_SECONDS`` (900): the window (of the failures' counts too).
    - ``DLAB_API_AUTH_FAILURES`` (20): failed authentications per client address and window.
    - ``DLAB_API_AUTH_FAILURES_PER_KEY`` (50): failed authentications per key id and window.
    - ``DLAB_API_MAX_BODY_BYTES`` (1 MiB): the largest request body.
    - ``DLAB_API_MAX_DEPTH`` (64): the deepest nesting of a JSON body.
    - ``DLAB_API_MAX_STAGES`` (100), ``DLAB_API_MAX_AGENTS`` (50): per experiment written.
    - ``DLAB_API_MAX_COHORTS`` (200): per experiment."""

    api_rate_limit: int = Field(default=100, ge=0)
    api_rate_window_seconds: float = Field(default=900, gt=0)
    api_auth_failures: int = Field(default=20, ge=1)
    api_auth_failures_per_key: int = Field(default=50, ge=1)
    api_max_body_bytes: int = Field(default=1 << 20, ge=1024)
    api_max_depth: int = Field(default=64, ge=8)
    api_max_stages: int = Field(default=100, ge=1)
    api_max_agents: int = Field(default=50, ge=0)
    api_max_cohorts: int = Field(default=200, ge=1)


@dataclasses.dataclass(frozen=True)
class Count:
    allowed: bool
    headers: dict[str, str]


class Windows:
    """Counters per caller in fixed windows, at most ``MAX_ENTRIES`` of them."""

    def __init__(self) -> None:
        self._counts: collections.OrderedDict[str, tuple[float, int]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._counts)

    def add(self, caller: str, window: float, by: int = 1) -> tuple[int, float]:
        """Count ``by`` for ``caller``: its count in its window and the seconds left of it."""
        now = time.monotonic()
        with self._lock:
            start, used = self._counts.pop(caller, (now, 0))
            if now - start >= window:
                start, used = now, 0
            used += by
            self._counts[caller] = (start, used)
            if len(self._counts) > MAX_ENTRIES:
                self._shrink(now, window)
        return used, start + window - now

    def _shrink(self, now: float, window: float) -> None:
        expired = [k for k, (start, _) in self._counts.items() if now - start >= window]
        for caller in expired:
            del self._counts[caller]
        while len(self._counts) > MAX_ENTRIES:
            self._counts.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


requests_counted = Windows()
failures = Windows()


def count(caller: str) -> Count:
    """Count one request of ``caller`` (its key id, or its address) in its window."""
    settings = ApiSettings.current()
    if not settings.api_rate_limit:
        return Count(True, {})
    used, left = requests_counted.add(caller, settings.api_rate_window_seconds)
    headers = {
        "RateLimit-Policy": f"{settings.api_rate_limit};w={int(settings.api_rate_window_seconds)}",
        "RateLimit-Limit": str(settings.api_rate_limit),
        "RateLimit-Remaining": str(max(0, settings.api_rate_limit - used)),
        "RateLimit-Reset": str(math.ceil(left)),
    }
    allowed = used <= settings.api_rate_limit
    if not allowed:
        headers["Retry-After"] = str(max(1, math.ceil(left)))
    return Count(allowed, headers)


def _limits(settings: ApiSettings) -> tuple[tuple[str, int], tuple[str, int]]:
    return ("client", settings.api_auth_failures), ("key", settings.api_auth_failures_per_key)


def guessing(client: str, key_id: str | None) -> int | None:
    """Seconds to wait, when ``client`` or ``key_id`` failed to authenticate too often."""
    settings = ApiSettings.current()
    waits = []
    for (kind, limit), who in zip(_limits(settings), (client, key_id), strict=True):
        if who is not None:
            used, left = failures.add(f"{kind}:{who}", settings.api_rate_window_seconds, by=0)
            if used >= limit:
                waits.append(max(1, math.ceil(left)))
    return max(waits) if waits else None


def failed(client: str, key_id: str | None) -> None:
    """One failed authentication of ``client`` with ``key_id``."""
    window = ApiSettings.current().api_rate_window_seconds
    failures.add(f"client:{client}", window)
    if key_id is not None:
        failures.add(f"key:{key_id}", window)


def client_address(request: flask.Request) -> str:
    """The caller's address: deployed (``K_SERVICE`` set, behind Google's front end), the
    address that front end appended last to ``X-Forwarded-For`` (what the caller put there
    comes before it); locally, the connection's."""
    forwarded = request.headers.get("X-Forwarded-For", "")
    if os.environ.get("K_SERVICE") and forwarded.strip():
        return forwarded.split(",")[-1].strip()
    return request.remote_addr or "unknown"
