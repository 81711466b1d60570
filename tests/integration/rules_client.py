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

DATABASE = "(default)"
Op = Literal["get", "list", "query", "create", "update", "set", "delete"]


@dataclasses.dataclass(frozen=True)
class User:
    """A signed-in Firebase user (anonymous when it has no email)."""

    uid: str
    email: str | None = None
    email_verified: bool | None = None

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
    return {key: encode(value) for key, value in data.items()}


class FirestoreRest:
    """The emulator's REST API for one project; every call returns the HTTP status."""

    def __init__(self, host: str, project: str) -> None:
        self.project = project
        self._root = f"projects/{project}/databases/{DATABASE}/documents"
        self._http = httpx.Client(base_url=f"http://{host}", timeout=30)
        self._emulator = f"/emulator/v1/projects/{project}"

    def close(self) -> None:
        self._http.close()

    def _headers(self, user: User | None) -> dict[str, str]:
        return {} if user is None else {"Authorization": f"Bearer {user.token(self.project)}"}

    # --- admin ------------------------------------------------------------------------------

    def put_rules(self, source: str) -> None:
        body = {"rules": {"files": [{"name": "firestore.rules", "content": source}]}}
        response = self._http.put(f"{self._emulator}:securityRules", json=body)
        assert response.status_code == 200, response.text

    def reset(self) -> None:
        response = self._http.delete(f"{self._emulator}/databases/{DATABASE}/documents")
        assert response.status_code == 200, response.text

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
        body = {"fields": fields(data or {})}
        if op in ("get", "list"):  # a document or a collection
            response = self._http.get(url, headers=headers)
        elif op == "query":
            response = self._query(path, where, headers)
        elif op == "create":
            parent, _, doc_id = url.rpartition("/")
            response = self._http.post(
                parent, params={"documentId": doc_id}, json=body, headers=headers
            )
        elif op == "update":
            params = [("currentDocument.exists", "true")]
            params += [("updateMask.fieldPaths", key) for key in (data or {})]
            response = self._http.patch(url, params=params, json=body, headers=headers)
        elif op == "set":
            response = self._http.patch(url, json=body, headers=headers)
        elif op == "delete":
            response = self._http.delete(url, headers=headers)
        else:
            raise ValueError(op)
        return response.status_code

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
