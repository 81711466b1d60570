"""Shared fixtures: one LocalRuntime (real emulators, real registry) per test session.

Modules that drive the functions request ``runtime``; add ``pytestmark =
pytest.mark.usefixtures("clean")`` to start every test from an empty database.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import emulator.metering  # noqa: E402,F401  (meters the functions' Firestore client)

if TYPE_CHECKING:
    from emulator.runtime import LocalRuntime


@pytest.fixture(scope="session")
def runtime() -> Iterator[LocalRuntime]:
    """The real registry on the emulators; DLAB_TRIGGER_MODE picks the delivery mode."""
    from emulator.runtime import LocalRuntime

    with LocalRuntime(mode=os.environ.get("DLAB_TRIGGER_MODE", "concurrent")) as rt:
        yield rt


@pytest.fixture
def clean(runtime: LocalRuntime) -> LocalRuntime:
    """Empty database, no pending work, empty delivery log; fires no function."""
    runtime.reset()
    return runtime
