"""The REST API's keys, kept as Deliberate Lab keeps them: ``experimenters/{email}/apiKeys/{keyId}``
holds a salted scrypt hash of the key (never the key), its owner, name and permissions.

The key id is the first 8 hex digits of the key's SHA-256, so a caller's key is found by one
collection-group query on ``keyId`` (a single-field collection-group index,
firestore.indexes.json) and then checked against the hash in constant time. Same parameters as
Deliberate Lab (scrypt N=16384, r=8, p=1, 64 bytes; the hex salt's text as the salt): a key made
by either backend verifies in the other. No client reads these documents (firestore.rules).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from typing import Literal

from google.cloud.firestore_v1.base_query import FieldFilter

from functions import store
from shared.models import DocModel

PREFIX = "dlb_live_"
Permission = Literal["read", "write"]
PERMISSIONS: tuple[Permission, ...] = ("read", "write")
COLLECTION_GROUP = "apiKeys"


class ApiKeyRecord(DocModel):
    """``experimenters/{experimenterId}/apiKeys/{keyId}``: DL's DeliberateLabAPIKeyData."""

    key_id: str
    hash: str
    salt: str
    experimenter_id: str
    name: str
    permissions: list[str]
    created_at: int
    last_used: int | None = None
    expires_at: int | None = None


def key_id(api_key: str) -> str:
    return hashlib.sha256(api_key.encode()).hexdigest()[:8]


def _hash(api_key: str, salt: str) -> bytes:
    return hashlib.scrypt(api_key.encode(), salt=salt.encode(), n=16384, r=8, p=1, dklen=64)


def key_path(experimenter_id: str, kid: str) -> str:
    return f"experimenters/{experimenter_id}/{COLLECTION_GROUP}/{kid}"


def create(
    experimenter_id: str, name: str, permissions: tuple[Permission, ...] = PERMISSIONS
) -> tuple[str, str]:
    """A new key for the experimenter (its email, lower-cased, as Deliberate Lab's ids are):
    ``(api_key, key_id)``. The key is shown once; only its hash is stored."""
    owner = experimenter_id.strip().lower()
    api_key = PREFIX + secrets.token_urlsafe(32)
    kid, salt = key_id(api_key), secrets.token_hex(16)
    record = ApiKeyRecord(
        key_id=kid,
        hash=_hash(api_key, salt).hex(),
        salt=salt,
        experimenter_id=owner,
        name=name,
        permissions=list(permissions),
        created_at=int(time.time() * 1000),
    )
    store.ref(key_path(owner, kid)).set(record.to_firestore())
    return api_key, kid


def verify(api_key: str) -> ApiKeyRecord | None:
    """The key's record if the key is valid and not expired; its ``lastUsed`` is stamped."""
    query = (
        store.db()
        .collection_group("apiKeys")
        .where(filter=FieldFilter("keyId", "==", key_id(api_key)))
        .limit(1)
    )
    for snap in query.stream():
        record = ApiKeyRecord.model_validate(snap.to_dict())
        now_ms = int(time.time() * 1000)
        if record.expires_at is not None and record.expires_at < now_ms:
            return None
        if not hmac.compare_digest(_hash(api_key, record.salt), bytes.fromhex(record.hash)):
            return None
        snap.reference.update(ApiKeyRecord.fields(last_used=now_ms))
        return record
    return None


def bearer_token(header: str | None) -> str | None:
    """The key of an ``Authorization: Bearer KEY`` header (scheme case-insensitive)."""
    match = _BEARER.match(header or "")
    return (match.group(1).strip() or None) if match else None


_BEARER = re.compile(r"^Bearer\s+(.+)$", re.IGNORECASE | re.DOTALL)
