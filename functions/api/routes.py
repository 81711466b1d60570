"""The REST API's entry: Deliberate Lab's middleware in its order (the rate limit, browser
refusal, the API key), then its routes; anything else is its 404 ``Cannot METHOD PATH``.

Deployed as the ``api`` HTTP function, so its routes sit under the function's URL:
``https://REGION-PROJECT.cloudfunctions.net/api/v1/...`` as in Deliberate Lab.
"""

from __future__ import annotations

import datetime
import logging
import re
from collections.abc import Callable

import flask

from functions import api_keys
from functions.api import cohorts, conversations, experiments, limits
from functions.api.http import (
    ApiError,
    Call,
    answer,
    authenticate,
    browser_refusal,
    error,
    too_large,
)
from shared import paths

log = logging.getLogger(__name__)

Handler = Callable[[Call], flask.Response]
_E = "/v1/experiments/(?P<id>[^/]+)"
_C = "/v1/experiments/(?P<experimentId>[^/]+)/cohorts"
_V = "/v1/conversations/(?P<id>[^/]+)"
ROUTES: tuple[tuple[str, str, Handler], ...] = (
    ("GET", "/v1/experiments", experiments.list_experiments),
    ("POST", "/v1/experiments", experiments.create_experiment),
    ("GET", _E, experiments.get_experiment),
    ("PUT", _E, experiments.update_experiment),
    ("DELETE", _E, experiments.delete_experiment),
    ("GET", _E + "/export", experiments.export_experiment),
    ("GET", _E + "/export/logs", experiments.export_logs),
    ("POST", _E + "/fork", experiments.fork_experiment),
    ("GET", _C, cohorts.list_cohorts),
    ("POST", _C, cohorts.create_cohort),
    ("GET", _C + "/(?P<cohortId>[^/]+)", cohorts.get_cohort),
    ("PUT", _C + "/(?P<cohortId>[^/]+)", cohorts.update_cohort),
    ("DELETE", _C + "/(?P<cohortId>[^/]+)", cohorts.delete_cohort),
    ("GET", _V, conversations.get_conversation),
    ("POST", _V + "/answer", conversations.answer_step),
)
_COMPILED = tuple((method, re.compile(pattern + "/?"), h) for method, pattern, h in ROUTES)
VERSION = "1.0.0"


def _health(_: Call) -> flask.Response:
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
    return answer(
        {"status": "healthy", "version": VERSION, "timestamp": stamp.replace("+00:00", "Z")}
    )


def _route(method: str, path: str) -> tuple[Handler, dict[str, str]] | None:
    if method == "GET" and path.rstrip("/") == "/v1/health":
        return _health, {}
    for wanted, pattern, handler in _COMPILED:
        match = pattern.fullmatch(path)
        if match and wanted == method:
            return handler, match.groupdict()
    return None


def handle(request: flask.Request) -> flask.Response:
    most = limits.ApiSettings.current().api_max_body_bytes
    if (request.content_length or 0) > most:  # whatever the route and the key: never read
        refused = too_large(most)
        return _unread(error(refused.status, refused.message))
    client = limits.client_address(request)
    token = api_keys.bearer_token(request.headers.get("Authorization"))
    key_id = api_keys.key_id(token) if token else None
    wait = limits.guessing(client, key_id)
    if wait is not None:
        answered = flask.Response(limits.GUESSING, status=429, mimetype="text/html")
        answered.headers["Retry-After"] = str(wait)
        return answered
    counted = limits.count(key_id or client)
    if not counted.allowed:
        answered = flask.Response(limits.MESSAGE, status=429, mimetype="text/html")
    else:
        answered = _answer(request)
        if answered.status_code == 401:
            limits.failed(client, key_id)
    answered.headers.update(counted.headers)
    return _unread(answered) if answered.status_code == 413 else answered


def _unread(answered: flask.Response) -> flask.Response:
    """A body refused unread: the answer as a stream (functions-framework reads a request's
    whole body after any other answer), and the connection closed after it."""
    streamed = flask.Response(iter([answered.get_data()]), status=413, mimetype="application/json")
    streamed.headers.update({**dict(answered.headers), "Connection": "close"})
    return streamed


def _answer(request: flask.Request) -> flask.Response:
    refused = browser_refusal(request)
    if refused is not None:
        return refused
    key = authenticate(request)
    if isinstance(key, flask.Response):
        return key
    found = _route(request.method, request.path)
    if found is None:
        return error(404, f"Cannot {request.method} {request.path}")
    handler, params = found
    for name, value in params.items():
        problem = paths.id_problem(value, limits.MAX_ID_BYTES)
        if problem is not None:
            return error(400, f"Invalid {name}: {problem}")
    try:
        return handler(Call(key, params, request))
    except ApiError as failure:
        return error(failure.status, failure.message)
    except Exception:  # logged; the caller is told no internal text (Deliberate Lab sends it)
        log.exception("API error: %s %s", request.method, request.path)
        return error(500, "Internal server error")
