"""One of every value a Firestore document can hold, for the tests that compare our protobuf
decoding (``fast_read``) and encoding (``fast_write``) with the client's own."""

from __future__ import annotations

import datetime
import math
from typing import Any

from google.api_core import datetime_helpers
from google.auth.credentials import AnonymousCredentials
from google.cloud import firestore
from google.cloud.firestore_v1.vector import Vector
from proto import datetime_helpers as proto_datetime_helpers

T0 = datetime.datetime(2026, 11, 23, 18, 0, 1, 234567, tzinfo=datetime.UTC)


def offline_client() -> firestore.Client:
    return firestore.Client(project="p", credentials=AnonymousCredentials())


def every_type(client: firestore.Client) -> dict[str, Any]:
    return {
        "null": None,
        "true": True,
        "false": False,
        "int": -(2**62),
        "zero": 0,
        "float": 2.5,
        "inf": math.inf,
        "string": "héllo 🐻",
        "empty": "",
        "bytes": b"\x00\xff",
        "time": T0,
        "naive": datetime.datetime(2026, 1, 2, 3, 4, 5, 6),
        "other zone": datetime.datetime(
            2026, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone(datetime.timedelta(hours=-5))
        ),
        "nanos": proto_datetime_helpers.DatetimeWithNanoseconds(
            2026, 1, 2, 3, 4, 5, nanosecond=123456789, tzinfo=datetime.UTC
        ),
        "api nanos": datetime_helpers.DatetimeWithNanoseconds(
            2026, 1, 2, 3, 4, 5, nanosecond=987654321, tzinfo=datetime.UTC
        ),
        "epoch": datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC),
        "before epoch": datetime.datetime(1969, 7, 20, 20, 17, 40, 5, tzinfo=datetime.UTC),
        "ref": client.document("experiments/e2"),
        "geo": firestore.GeoPoint(48.85, 2.35),
        "array": [1, "two", None, [3.0], {"k": T0}, ()],
        "tuple": (1, 2),
        "set": {3},
        "emptyArray": [],
        "map": {"a": {"b": {"c": T0, "d": [T0]}}, "dotted.key": 1, "`tick`": 2},
        "emptyMap": {},
        "vector": Vector([1.0, 2.0]),
        "looks": {"__oid__": "nope", "other": 1},
    }
