"""Meter the functions' Firestore client in local runs (the runtime, its workers, the tests).

``google.cloud.firestore.Client`` builds its own gRPC channel and has no public way to take one,
so deployed code cannot put ``functions.usage``'s interceptors on it (``functions.firestore_api``
meters its own channel). Here, outside the deployed code, the client is handed a GAPIC client on
a metered channel through the attribute it keeps it in: ``usage.counting()`` then counts every
RPC of a local run, as the cost tests and ``python -m tools.usage_report`` need. A client
release that renames the attribute fails the cost tests, not the functions.
"""

from __future__ import annotations

from google.cloud import firestore
from google.cloud.firestore_v1.services.firestore import FirestoreClient

from functions import clients, firestore_api


def meter(client: firestore.Client) -> None:
    client._firestore_api_internal = FirestoreClient(transport=firestore_api.transport())


clients.on_create(meter)
