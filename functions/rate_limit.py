"""A provider's rate limit, shared by every instance: callers wait their turn, not for 429s.

A fixed window (``DLAB_RATE_WINDOW_SECONDS``) gets the provider's per-minute limits scaled to its
length, split over shard documents ``rateLimits/{provider}-{window}-{shard}`` (each with its part
of the quota). A caller takes a slot with one write: an atomic increment of a random shard's
``requests`` and ``tokens``, whose values after the increment come back in the commit's
transform results. A value within the shard's part is a slot; over it, the shard is full: the
increment is taken back and the next shard tried. When every shard is full the caller sleeps to
the next window (with jitter), within the function's deadline; past it, a retryable QUOTA_ERROR,
like the provider's own 429. No slot is given in a window's last second (``guard``), so a request
reaches the provider in the window it was counted in. No transaction: increments of one document
never conflict, so a slot costs one round trip however many callers contend. See docs/COST.md.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta

from google.cloud import firestore

from functions import store
from functions.settings import BackboneSettings, RateLimit, backbone_settings
from shared.llm.base import ModelError, ModelRequest, estimate_tokens
from shared.llm.retry import MIN_ATTEMPT_S

COLLECTION = "rateLimits"
KEEP = timedelta(hours=1)
"""A window's shards carry ``expireAt`` this long after it: a Firestore TTL policy on that field
deletes them (docs/COST.md)."""


def request_tokens(request: ModelRequest) -> int:
    """What a request may use, counted before it is sent: its text's estimate, and the reply's
    ``maxTokens`` when set (a provider's tokens-per-minute counts both)."""
    asked = sum(estimate_tokens(m.text) for m in request.messages)
    most = request.generation_config.get("maxTokens")
    return asked + (int(most) if isinstance(most, int | float) and most > 0 else 0)


def _parts(total: int, shards: int) -> list[int]:
    """``total`` split over ``shards`` as evenly as integers allow."""
    return [total // shards + (1 if i < total % shards else 0) for i in range(shards)]


def _shard_count(limit: RateLimit, per_window: tuple[int, int], configured: int) -> int:
    """No more shards than the window has requests (or tokens, when only they are limited)."""
    requests, tokens = per_window
    bound = requests if limit.requests_per_minute else tokens
    return max(1, min(configured, bound))


def _per_window(limit: RateLimit, window_s: float) -> tuple[int, int]:
    scale = window_s / 60.0
    requests = max(1, int(limit.requests_per_minute * scale)) if limit.requests_per_minute else 0
    tokens = max(1, int(limit.tokens_per_minute * scale)) if limit.tokens_per_minute else 0
    return requests, tokens


def _try_shard(path: str, tokens: int, caps: tuple[int, int], expires: datetime) -> bool:
    """One increment; True if it fit this shard's part (else it is taken back)."""
    cap_requests, cap_tokens = caps
    ref = store.ref(path)
    counts = {"requests": firestore.Increment(1), "tokens": firestore.Increment(tokens)}
    result = ref.set({**counts, "expireAt": expires}, merge=True)
    after = [value.integer_value for value in result.transform_results]
    fits = (not cap_requests or after[0] <= cap_requests) and (
        not cap_tokens or after[1] <= cap_tokens
    )
    if not fits:
        ref.set(
            {"requests": firestore.Increment(-1), "tokens": firestore.Increment(-tokens)},
            merge=True,
        )
    return fits


def _take(provider: str, limit: RateLimit, tokens: int, config: BackboneSettings) -> float | None:
    """A slot in the current window (None), or the time the next window starts."""
    window_s = config.rate_window_seconds
    clock = time.time()
    window = int(clock // window_s)
    if clock + config.guard_s() >= (window + 1) * window_s:
        return (window + 1) * window_s  # too near the window's end to reach the provider in it
    per_window = _per_window(limit, window_s)
    shards = _shard_count(limit, per_window, config.rate_shards)
    requests, token_parts = _parts(per_window[0], shards), _parts(per_window[1], shards)
    expires = datetime.fromtimestamp((window + 1) * window_s, UTC) + KEEP
    if per_window[1]:
        tokens = min(tokens, max(token_parts))  # a larger request takes one whole part
    order = list(range(shards))
    random.shuffle(order)
    for shard in order:
        caps = (requests[shard], token_parts[shard])
        path = f"{COLLECTION}/{provider}-{window}-{shard}"
        if _try_shard(path, tokens, caps, expires):
            return None
    return (window + 1) * window_s


def acquire(provider: str, request: ModelRequest, deadline: float | None) -> None:
    """Wait for a slot of ``provider``'s shared quota (at once when none is configured); a
    retryable QUOTA_ERROR when the deadline (``time.monotonic()``) comes first."""
    config = backbone_settings()
    limit = config.rate_limits.get(provider)
    if limit is None or not (limit.requests_per_minute or limit.tokens_per_minute):
        return
    tokens = request_tokens(request) if limit.tokens_per_minute else 0
    while True:
        next_window = _take(provider, limit, tokens, config)
        if next_window is None:
            return
        jitter = random.uniform(0, min(1.0, config.rate_window_seconds / 10))
        wait = max(0.0, next_window - time.time()) + jitter
        if deadline is not None and time.monotonic() + wait + MIN_ATTEMPT_S > deadline:
            raise ModelError(
                "QUOTA_ERROR",
                f"the shared rate limit of {provider} ({limit.requests_per_minute} requests, "
                f"{limit.tokens_per_minute} tokens a minute) left no slot before the deadline",
                True,
                429,
            )
        time.sleep(wait)
