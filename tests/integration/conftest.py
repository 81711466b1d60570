"""Fixtures for tests that run the real functions on the real emulators."""

from __future__ import annotations

from typing import Any

import pytest
from google.cloud import firestore

from emulator import metering


@pytest.fixture
def db(runtime: Any, clean: Any, monkeypatch: pytest.MonkeyPatch) -> firestore.Client:
    """A client on a freshly reset emulator, metered like the functions' (``usage.counting``);
    agents run on the offline scripted model."""
    monkeypatch.setenv("DLAB_MODEL_OVERRIDE", "SCRIPTED")
    client = firestore.Client(project=runtime.project)
    metering.meter(client)
    return client
