"""The demo experiment under chaos on the session's runtime (checks in ``chaos_demo``)."""

from __future__ import annotations

import pytest
from chaos_demo import run_demo_under_chaos

pytestmark = pytest.mark.usefixtures("clean")


def test_demo_experiment_under_chaos(runtime, db, monkeypatch):
    run_demo_under_chaos(runtime, db, monkeypatch)
