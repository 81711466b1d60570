"""The REST API's request and answer: the caller's key, JSON bodies, and Deliberate Lab's
errors (``{"error": message}`` with its status codes and messages)."""

from __future__ import annotations

import dataclasses
import json
import re
import urllib.parse
from typing import Any

import flask
from pydantic import ValidationError
from werkzeug.exceptions import RequestEntityTooLarge

from functions import api_keys, download
from functions.api.limits import ApiSettings
from shared.errors import BadInput


class ApiError(BadInput):
    """An answer other than success: Deliberate Lab's ``{"error": message}`` body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def too_large(most: int) -> ApiError:
    return ApiError(413, f"Request body too large: at most {most} bytes")


@dataclasses.dataclass(frozen=True)
class Call:
    """One authenticated request: the key's record, the route's parameters, the request."""

    key: api_keys.ApiKeyRecord
    params: dict[str, str]
    request: flask.Request

    @property
    def experimenter(self) -> str:
        return self.key.experimenter_id

    def require(self, permission: str) -> None:
        if permission not in self.key.permissions:
            raise ApiError(403, "Insufficient permissions")

    def body(self) -> dict[str, Any]:
        """The JSON body (``{}`` when there is none, as express.json() leaves it): 413 past
        the body limit (from its ``Content-Length``, before reading it), 400 past the depth
        limit or when it is not a JSON object."""
        settings = ApiSettings.current()
        self.request.max_content_length = settings.api_max_body_bytes
        try:
            raw = self.request.get_data(as_text=True)
        except RequestEntityTooLarge:
            raise too_large(settings.api_max_body_bytes) from None
        if not raw.strip():
            return {}
        if _depth(raw) > settings.api_max_depth:
            raise ApiError(
                400, f"Invalid JSON body: nested deeper than {settings.api_max_depth} levels"
            )
        try:
            body = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ApiError(400, f"Invalid JSON body: {error}") from None
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid request body: must be a JSON object")
        return body


_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _depth(raw: str) -> int:
    """How deep the JSON text's arrays and objects nest (strings skipped), without parsing it:
    the parser recurses once per level."""
    deepest = depth = 0
    for match in _STRING_OR_BRACKET.finditer(raw):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def field_problem(error: ValidationError, where: str) -> str:
    """A model's first complaint, short: the field's JSON path under ``where`` and what is
    wrong (``/template/experiment/metadata/name: Input should be a valid string``)."""
    first = error.errors()[0]
    path = "/".join(str(part) for part in first["loc"])
    return f"{where}/{path}: {first['msg']}" if path else f"{where}: {first['msg']}"


def answer(body: Any, status: int = 200) -> flask.Response:
    return flask.Response(
        json.dumps(download.plain(body)), status=status, mimetype="application/json"
    )


def error(status: int, message: str) -> flask.Response:
    return answer({"error": message}, status)


LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def browser_refusal(request: flask.Request) -> flask.Response | None:
    """Server-to-server only, as Deliberate Lab: a request with an Origin or Referer whose host
    is not exactly a loopback name (``localhost``, ``127.0.0.1``, ``::1``) is refused."""
    origin = request.headers.get("Origin") or request.headers.get("Referer")
    if origin and _host(origin) not in LOCAL_HOSTS:
        return error(
            403, "Browser access not allowed. Use API keys from server-side applications only."
        )
    return None


def _host(url: str) -> str | None:
    try:
        return urllib.parse.urlsplit(url.strip()).hostname
    except ValueError:
        return None


def authenticate(request: flask.Request) -> api_keys.ApiKeyRecord | flask.Response:
    """The caller's key record, or Deliberate Lab's 401 answer."""
    header = request.headers.get("Authorization")
    token = api_keys.bearer_token(header)
    if token is None:
        what = "Invalid Authorization header format" if header else "Missing Authorization header"
        return error(401, f"{what}. Use: Authorization: Bearer YOUR_API_KEY")
    record = api_keys.verify(token)
    if record is None:
        return error(401, "Invalid or expired API key")
    return record
