"""Decoding one participant-like document, the client's way and ``functions.fast_read``'s.

``python -m bench.decode``: a BatchGetDocumentsResponse (about 40 fields, 23 timestamps in
nested maps, as a profile with ten stages' ready and completed times) turned into a snapshot,
CPU per document, best of five rounds. Not part of the tests.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any

from google.auth.credentials import AnonymousCredentials
from google.cloud import firestore
from google.cloud.firestore_v1 import _helpers
from google.cloud.firestore_v1.types import document as document_types
from google.cloud.firestore_v1.types import firestore as firestore_types

from functions import fast_read

T0 = datetime.datetime(2026, 11, 23, 18, 0, tzinfo=datetime.UTC)
STAGES = [f"stage{i}" for i in range(10)]


def _ts(i: int) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=i, microseconds=123456 + i)


def participant() -> dict[str, Any]:
    data: dict[str, Any] = {
        "privateId": "p" * 20,
        "publicId": "bear-12",
        "prolificId": None,
        "name": "Agent 7",
        "avatar": "🐻",
        "pronouns": "they/them",
        "currentStageId": "stage4",
        "currentCohortId": "c1",
        "transferCohortId": None,
        "currentStatus": "IN_PROGRESS",
        "currentExperimentId": "e1",
        "type": "participant",
        "connected": True,
        "agentConfig": {
            "agentId": "a1",
            "promptContext": "x" * 200,
            "modelSettings": {"apiType": "OPENAI", "modelName": "gpt"},
        },
        "variableMap": {},
        "timestamps": {
            "accountCreated": _ts(0),
            "startExperiment": _ts(1),
            "endExperiment": None,
            "acceptedTOS": _ts(2),
            "cohortTransfers": {},
            "readyStages": {s: _ts(10 + i) for i, s in enumerate(STAGES)},
            "completedStages": {s: _ts(30 + i) for i, s in enumerate(STAGES)},
        },
        "anonymousProfiles": {},
        "extra": [1, 2.5, "s", True, None],
    }
    for i in range(40 - len(data)):
        data[f"f{i}"] = i if i % 2 else f"value {i}"
    return data


def _best(fn: Callable[[], Any], n: int = 2000) -> float:
    fn()
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, (time.process_time() - start) / n)
    return best


def main() -> None:
    client = firestore.Client(project="p", credentials=AnonymousCredentials())
    ref = client.document("experiments/e1/participants/" + "p" * 20)
    document = document_types.Document(
        name=ref._document_path,
        fields=_helpers.encode_dict(participant()),
        create_time=_ts(0),
        update_time=_ts(5),
    )
    raw = firestore_types.BatchGetDocumentsResponse.serialize(
        firestore_types.BatchGetDocumentsResponse(found=document, read_time=_ts(9))
    )
    refs = {ref._document_path: ref}
    theirs = fast_read._ORIGINALS[(fast_read.base_client, "_parse_batch_get")]

    def parse(parser: Any) -> Any:
        return parser(firestore_types.BatchGetDocumentsResponse.deserialize(raw), refs, client)

    def cold() -> Any:
        fast_read._times.clear()
        return parse(fast_read.parse_batch_get)

    assert parse(fast_read.parse_batch_get).to_dict() == parse(theirs).to_dict()
    client_us = _best(lambda: parse(theirs)) * 1e6
    warm_us = _best(lambda: parse(fast_read.parse_batch_get)) * 1e6
    cold_us = _best(cold) * 1e6
    print(f"client's _parse_batch_get: {client_us:.1f} us per document")
    print(f"fast_read, timestamps cached: {warm_us:.1f} us (x{client_us / warm_us:.1f})")
    ratio = client_us / cold_us
    print(f"fast_read, timestamp cache emptied each time: {cold_us:.1f} us (x{ratio:.1f})")


if __name__ == "__main__":
    main()
