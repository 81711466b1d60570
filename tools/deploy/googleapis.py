"""Direct calls to Google REST APIs, for the two things gcloud cannot do: releasing Firestore
security rules, and single-field indexes with collection-group scope.

The access token is gcloud's, so the same account deploys everything. Endpoints follow gcloud's
override convention (``CLOUDSDK_API_ENDPOINT_OVERRIDES_<API>``), so tests can point them at a
local fake.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import urllib.error
import urllib.request
from typing import Any


class ApiError(RuntimeError):
    pass


@functools.cache
def access_token() -> str:
    result = subprocess.run(
        ["gcloud", "auth", "print-access-token"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise ApiError(f"gcloud auth print-access-token failed: {result.stderr.strip()}")
    return result.stdout.strip()


def base_url(api: str) -> str:
    """``https://{api}.googleapis.com/v1``, or gcloud's override for that API."""
    override = os.environ.get(f"CLOUDSDK_API_ENDPOINT_OVERRIDES_{api.upper()}")
    return (override or f"https://{api}.googleapis.com/").rstrip("/") + "/v1"


def call(
    api: str,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    project: str,
    token: str | None = None,
) -> dict[str, Any]:
    """One JSON call (no body for a read), billed to ``project``; an HTTP error raises
    ApiError with the reply."""
    url = f"{base_url(api)}/{path}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token or access_token()}")
    request.add_header("Content-Type", "application/json")
    request.add_header("X-Goog-User-Project", project)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace")
        raise ApiError(f"{method} {url} -> HTTP {error.code}: {detail}") from None
