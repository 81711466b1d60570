"""The runtime's health marker (``emulator.health.TriggerMarker``) against an emulator that comes
back with the marker in its imported data (issue 40 row 9): a check refused or cut off re-arms
the triggers at the next answer even though the marker is there; a check that was only slow
does not."""

from __future__ import annotations

import urllib.error
from typing import Any

from emulator import health


class _Admin:
    """What the marker asks of the emulator: the marker's document, present or not, or the
    emulator not answering (``failing``)."""

    host = "127.0.0.1:8080"

    def __init__(self) -> None:
        self.failing: BaseException | None = None

    def document_exists(self, path: str, timeout: float) -> bool:
        if self.failing is not None:
            raise self.failing
        return True

    def put_document(self, path: str, fields: dict[str, float], timeout: float) -> None:
        pass


def _marker() -> tuple[health.TriggerMarker, _Admin, list[int]]:
    admin, armed = _Admin(), []

    def arm() -> int:
        armed.append(1)
        return 17

    admin_any: Any = admin
    marker = health.TriggerMarker(admin_any, arm)
    marker.arm()
    return marker, admin, armed


def test_an_emulator_that_went_away_is_armed_again_though_its_marker_came_back() -> None:
    marker, admin, armed = _marker()
    admin.failing = urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
    assert marker.check() is None  # a short silence is not said
    admin.failing = None
    said = marker.check()
    assert said is not None and "registered 17 triggers again" in said, said
    assert len(armed) == 2
    assert marker.check() is None  # armed: the next answer is quiet
    assert len(armed) == 2


def test_a_check_that_was_only_slow_arms_nothing() -> None:
    marker, admin, armed = _marker()
    for slow in (TimeoutError("timed out"), urllib.error.URLError(TimeoutError("timed out"))):
        admin.failing = slow
        assert marker.check() is None
        admin.failing = None
        assert marker.check() is None
    assert len(armed) == 1
