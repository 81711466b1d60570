"""The REST API's request and answer: the caller's key, JSON bodies, and Deliberate Lab's
errors (``{"error": message}`` with its status codes and messages)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import flask

from functions import api_keys, download


class ApiError(Exception):
    """An answer other than success: Deliberate Lab's ``{"error": message}`` body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


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
        """The JSON body (``{}`` when there is none, as express.json() leaves it)."""
        raw = self.request.get_data(as_text=True)
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ApiError(400, f"Invalid JSON body: {error}") from None
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid request body: must be a JSON object")
        return body


def answer(body: Any, status: int = 200) -> flask.Response:
    return flask.Response(
        json.dumps(download.plain(body)), status=status, mimetype="application/json"
    )


def error(status: int, message: str) -> flask.Response:
    return answer({"error": message}, status)


def browser_refusal(request: flask.Request) -> flask.Response | None:
    """Server-to-server only, as Deliberate Lab: a request with an Origin or Referer that is not
    localhost is refused."""
    origin = request.headers.get("Origin") or request.headers.get("Referer")
    if origin and "localhost" not in origin and "127.0.0.1" not in origin:
        return error(
            403, "Browser access not allowed. Use API keys from server-side applications only."
        )
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
