"""Firestore REST calls as a given user, so the emulator evaluates the security rules.

The Python client always sends ``Bearer owner`` (admin, rules bypassed); the rules only apply to
requests carrying a Firebase ID token, which the emulator accepts unsigned (``alg: none``), as
Firebase's own rules-unit-testing library sends them.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import json
import time
from typing import Any, Literal

import httpx

from emulator.firestore_admin import FirestoreAdmin

DATABASE = "(default)"
Op = Literal["get", "list", "query", "create", "update", "set", "delete"]


class _ServerTime:
    """A field value the server fills in with the request's time (a client SDK's
    ``serverTimestamp()``): sent as a REQUEST_TIME transform, so rules see ``request.time``."""

    def __repr__(self) -> str:
        return "SERVER_TIME"


SERVER_TIME = _ServerTime()


@dataclasses.dataclass(frozen=True)
class User:
    """A signed-in Firebase user (anonymous when it has no email)."""

    uid: str
    email: str | None = None
    email_verified: bool | None = None
    claims: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Custom claims (set with admin credentials, e.g. ``role: experimenter``)."""

    def token(self, project: str) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": f"https://securetoken.google.com/{project}",
            "aud": project,
            "iat": now,
            "exp": now + 3600,
            "auth_time": now,
            "sub": self.uid,
            "user_id": self.uid,
            "firebase": {
                "sign_in_provider": "anonymous" if self.email is None else "google.com",
                "identities": {},
            },
        }
        if self.email is not None:
            claims["email"] = self.email
        if self.email_verified is not None:
            claims["email_verified"] = self.email_verified
        claims.update(self.claims)
        header = {"alg": "none", "kid": "fakekid", "typ": "JWT"}
        return f"{_b64(header)}.{_b64(claims)}."


def _b64(obj: dict[str, Any]) -> str:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def encode(value: Any) -> dict[str, Any]:
    """A Python value as a Firestore REST ``Value``."""
    if value is None:
        return {"nullValue": None}
    if isinstance(value, bool):
        return {"booleanValue": value}
    if isinstance(value, int):
        return {"integerValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, datetime.datetime):
        return {"timestampValue": value.astimezone(datetime.UTC).isoformat()}
    if isinstance(value, dict):
        return {"mapValue": {"fields": fields(value)}}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [encode(v) for v in value]}}
    raise TypeError(f"cannot encode {type(value).__name__}")


def fields(data: dict[str, Any]) -> dict[str, Any]:
    return {key: encode(value) for key, value in data.items() if value is not SERVER_TIME}


def server_time_paths(data: dict[str, Any], prefix: str = "") -> list[str]:
    """Field paths of SERVER_TIME values, nested maps included."""
    found = []
    for key, value in data.items():
        path = f"{prefix}{_field_name(key)}"
        if value is SERVER_TIME:
            found.append(path)
        elif isinstance(value, dict):
            found += server_time_paths(value, f"{path}.")
    return found


def _field_name(key: str) -> str:
    simple = key.replace("_", "a").isalnum() and not key[:1].isdigit()
    return key if simple else "`" + key.replace("\\", "\\\\").replace("`", "\\`") + "`"


class FirestoreRest:
    """The emulator's REST API for one project; every call returns the HTTP status."""

    def __init__(self, host: str, project: str) -> None:
        self.project = project
        self._root = f"projects/{project}/databases/{DATABASE}/documents"
        self._http = httpx.Client(base_url=f"http://{host}", timeout=30)
        self._admin = FirestoreAdmin(host, project)
        self.last_reply = ""
        """The body of the last call's reply (a denial names the rule that failed)."""

    def close(self) -> None:
        self._http.close()

    def _headers(self, user: User | None) -> dict[str, str]:
        return {} if user is None else {"Authorization": f"Bearer {user.token(self.project)}"}

    # --- admin ------------------------------------------------------------------------------

    def put_rules(self, source: str) -> None:
        self._admin.put_rules(source)

    def reset(self) -> None:
        self._admin.reset()

    def seed(self, documents: dict[str, dict[str, Any]]) -> None:
        """Write documents with admin rights (``Bearer owner`` bypasses the rules)."""
        writes = [
            {"update": {"name": f"{self._root}/{path}", "fields": fields(data)}}
            for path, data in documents.items()
        ]
        response = self._http.post(
            f"/v1/projects/{self.project}/databases/{DATABASE}/documents:commit",
            json={"writes": writes},
            headers={"Authorization": "Bearer owner"},
        )
        assert response.status_code == 200, response.text

    # --- as a user --------------------------------------------------------------------------

    def call(
        self,
        user: User | None,
        op: Op,
        path: str,
        data: dict[str, Any] | None = None,
        where: tuple[str, Any] | None = None,
    ) -> int:
        """Run one operation on ``path`` (a document, or a collection for list/query/create)."""
        headers = self._headers(user)
        url = f"/v1/{self._root}/{path}"
        if op in ("get", "list"):  # a document or a collection
            response = self._http.get(url, headers=headers)
        elif op == "query":
            response = self._query(path, where, headers)
        else:
            response = self._commit(self._write(op, path, data or {}), headers)
        self.last_reply = response.text[:2000]
        return response.status_code

    def _write(self, op: Op, path: str, data: dict[str, Any]) -> dict[str, Any]:
        """One write of a commit, as a client SDK sends it: create and update with their
        preconditions, set without; SERVER_TIME values as transforms of the same write."""
        name = f"{self._root}/{path}"
        if op == "delete":
            return {"delete": name}
        write: dict[str, Any] = {"update": {"name": name, "fields": fields(data)}}
        if op == "create":
            write["currentDocument"] = {"exists": False}
        elif op == "update":
            write["currentDocument"] = {"exists": True}
            write["updateMask"] = {"fieldPaths": [_field_name(k) for k in data]}
        elif op != "set":
            raise ValueError(op)
        stamps = server_time_paths(data)
        if stamps:
            write["updateTransforms"] = [
                {"fieldPath": p, "setToServerValue": "REQUEST_TIME"} for p in stamps
            ]
        return write

    def _commit(self, write: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        url = f"/v1/projects/{self.project}/databases/{DATABASE}/documents:commit"
        return self._http.post(url, json={"writes": [write]}, headers=headers)

    def _query(
        self, collection: str, where: tuple[str, Any] | None, headers: dict[str, str]
    ) -> httpx.Response:
        parent, _, collection_id = collection.rpartition("/")
        query: dict[str, Any] = {"from": [{"collectionId": collection_id}]}
        if where is not None:
            field, value = where
            query["where"] = {
                "fieldFilter": {
                    "field": {"fieldPath": field},
                    "op": "EQUAL",
                    "value": encode(value),
                }
            }
        url = f"/v1/{self._root}/{parent}:runQuery" if parent else f"/v1/{self._root}:runQuery"
        return self._http.post(url, json={"structuredQuery": query}, headers=headers)
