"""Pure decisions of the backbone: where an error is filed and under which id, what kind an
exception is, what a failed unit records, when a lease is live, the invocation's deadline."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from functions import _entry, deadline, errors, leases, work
from functions._events import FirestoreEvent, PubSubEvent
from shared.errors import BadInput, Kind, Pause, PlatformError, UserCodeError
from shared.models import DocumentError

AT = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


# --- functions.errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (BadInput("x"), Kind.BAD_INPUT),
        (DocumentError("experiments/e", "f", "r"), Kind.BAD_INPUT),
        (Pause("cap"), Kind.PAUSE),
        (PlatformError("x"), Kind.PLATFORM),
        (UserCodeError("fn", ValueError("v")), Kind.USER_CODE),
        (gexc.ServiceUnavailable("down"), Kind.PLATFORM),
        (gexc.Aborted("contention"), Kind.PLATFORM),
        (gexc.NotFound("gone"), Kind.WORK),  # not transient: a bug, the work's
        (KeyError("k"), Kind.WORK),
    ],
)
def test_kind_of_each_exception(error: BaseException, kind: Kind) -> None:
    assert errors.kind_of(error) is kind


def test_error_id_same_for_same_document_field_reason_only() -> None:
    one = errors.error_id(DocumentError("experiments/e/participants/p", "name", "missing"))
    again = errors.error_id(DocumentError("experiments/e/participants/p", "name", "missing"))
    assert one == again
    assert len(one) == 24 and all(c in "0123456789abcdef" for c in one)
    others = {
        errors.error_id(DocumentError("experiments/e/participants/q", "name", "missing")),
        errors.error_id(DocumentError("experiments/e/participants/p", "age", "missing")),
        errors.error_id(DocumentError("experiments/e/participants/p", "name", "empty")),
    }
    assert one not in others and len(others) == 3


def test_error_id_fields_do_not_run_into_each_other() -> None:
    # "a/b" + "c" and "a" + "b/c": joined with a separator, not concatenated
    assert errors.error_id(DocumentError("ab", "c", "r")) != errors.error_id(
        DocumentError("a", "bc", "r")
    )


@pytest.mark.parametrize(
    ("document", "experiment"),
    [
        ("experiments/e1", "e1"),
        ("experiments/e1/participants/p1", "e1"),
        ("experiments", None),
        ("societies/s1", None),
        ("pubsub/topic/1", None),
    ],
)
def test_experiment_of(document: str, experiment: str | None) -> None:
    assert errors.experiment_of(document) == experiment


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ("experiments/e1/participants/p1", "experiments/e1/errors/R"),
        ("societies/s1/days/3", "societies/s1/errors/R"),
        ("debates/d1/rounds/r", "debates/d1/errors/R"),
        ("conversations/c1", "conversations/c1/errors/R"),
        ("workflows/w1/agents/a", "workflows/w1/errors/R"),
        ("societies/", None),  # no id: belongs to none
        ("pubsub/topic/1", None),
        ("experimenterData/x", None),
    ],
)
def test_record_path(document: str, path: str | None) -> None:
    assert errors.record_path(document, "R") == path


def test_invoked_as_names_the_function_within_and_restores_it() -> None:
    assert errors.current_function() == "backend"
    with errors.invoked_as("onMove"):
        assert errors.current_function() == "onMove"
        with errors.invoked_as("inner"):
            assert errors.current_function() == "inner"
        assert errors.current_function() == "onMove"
    assert errors.current_function() == "backend"


# --- functions._entry ---------------------------------------------------------------------


def _message(payload: Any, raw: bytes | None = None) -> PubSubEvent:
    data = raw if raw is not None else json.dumps(payload).encode()
    return PubSubEvent(id="42", topic="turns", data=data, attributes={})


def test_subject_of_a_firestore_event_is_its_document() -> None:
    event = FirestoreEvent("1", "written", "experiments/e/stages/s", {}, None, {"a": 1})
    assert _entry._subject(event) == "experiments/e/stages/s"


@pytest.mark.parametrize(
    ("payload", "subject"),
    [
        ({"societyId": "s1", "day": 2}, "societies/s1"),
        ({"debateId": "d1"}, "debates/d1"),
        ({"conversationId": "c1"}, "conversations/c1"),
        ({"societyId": ""}, "pubsub/turns/42"),  # named but empty: the message itself
        ({"experimentId": "e1"}, "experiments/e1"),
        ({"experimentId": "e1", "participantId": "p1"}, "experiments/e1/participants/p1"),
        ({"experimentId": "e1", "agentId": "a1"}, "experiments/e1/participants/a1"),
        (
            {"experimentId": "e1", "agentId": "m1", "agentType": "mediator"},
            "experiments/e1/mediators/m1",
        ),
        ({"experimentId": 7}, "pubsub/turns/42"),
        ({"other": "x"}, "pubsub/turns/42"),
        ([1, 2], "pubsub/turns/42"),
    ],
)
def test_subject_of_a_message(payload: Any, subject: str) -> None:
    assert _entry._subject(_message(payload)) == subject


def test_subject_of_a_message_that_is_not_json_is_the_message() -> None:
    assert _entry._subject(_message(None, raw=b"{not json")) == "pubsub/turns/42"


def test_recorded_as_keeps_a_document_error() -> None:
    error = DocumentError("experiments/e/stages/s", "kind", "unknown")
    assert _entry._recorded_as(_message({}), error, errors.kind_of(error)) is error


def test_recorded_as_files_bugs_and_bad_input_under_the_subject() -> None:
    event = _message({"debateId": "d9"})
    bug = _entry._recorded_as(event, KeyError("x"), Kind.WORK)
    assert (bug.document, bug.field) == ("debates/d9", "(function)")
    assert bug.reason == "KeyError: 'x'"
    bad = _entry._recorded_as(event, BadInput("no such stage"), Kind.BAD_INPUT)
    assert (bad.field, bad.reason) == ("(input)", "BadInput: no such stage")


# --- functions.work -----------------------------------------------------------------------


def _unit() -> work.Unit[None]:
    return work.Unit(lease="leases/u", document="debates/d/agents/a", work=lambda: None)


def test_where_a_document_error_keeps_its_own_place() -> None:
    error = DocumentError("debates/d/rounds/r", "agents", "empty")
    where = work._where(_unit(), error, errors.kind_of(error))
    assert where == ("debates/d/rounds/r", "agents", "empty")


def test_where_user_code_names_the_function() -> None:
    error = UserCodeError("kit.categorize", ZeroDivisionError("division by zero"))
    document, field, cause = work._where(_unit(), error, errors.kind_of(error))
    assert (document, field) == ("debates/d/agents/a", "kit.categorize")
    assert "ZeroDivisionError" in cause and "kit.categorize" in cause


def test_where_other_errors_fall_on_the_unit() -> None:
    assert work._where(_unit(), ValueError("boom"), Kind.WORK) == (
        "debates/d/agents/a",
        "(work)",
        "ValueError: boom",
    )
    assert work._where(_unit(), BadInput("bad"), Kind.BAD_INPUT)[1] == "(input)"


def test_ending_says_attempts_and_cause() -> None:
    failure = work._ending("debates/d", "(work)", 3, "ValueError: boom")
    assert failure.attempts == 3 and failure.cause == "ValueError: boom"
    assert failure.reason == "gave up after 3 attempt(s); the last: ValueError: boom"
    # the record is the one its attempts counted in: the cause, not the summary
    assert failure.recorded.reason == "ValueError: boom"
    assert errors.error_id(failure.recorded) == errors.error_id(
        DocumentError("debates/d", "(work)", "ValueError: boom")
    )


def test_failure_without_cause_records_its_reason() -> None:
    failure = work.Failure("debates/d", "f", 1, "stopped")
    assert failure.recorded.reason == "stopped"


def test_interrupted_is_the_platforms_with_the_died_cause_by_default() -> None:
    held = leases.Held("leases/u", "t", attempt=2)
    failure = work._interrupted("debates/d", held, 4, "")
    assert failure.field == "(platform)" and failure.attempts == 2
    assert failure.cause == leases.DIED
    assert "4 time(s)" in failure.reason and "2 attempt(s)" in failure.reason
    assert work._interrupted("debates/d", held, 1, "Aborted").cause == "Aborted"


# --- functions.leases ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "expires", "live"),
    [
        ("t", AT + timedelta(seconds=1), True),
        ("t", AT, False),  # expiring at the instant: not live
        ("t", AT - timedelta(seconds=1), False),
        ("", AT + timedelta(seconds=30), False),  # let go after a failure
        ("t", None, False),
    ],
)
def test_expiring_live(token: str, expires: datetime | None, live: bool) -> None:
    assert leases.Expiring(token=token, expires_at=expires).live(AT) is live


def _snap(data: dict[str, Any] | None) -> Any:
    return SimpleNamespace(exists=data is not None, to_dict=lambda: data)


def test_lease_doc_of_reads_firestore_names() -> None:
    lease = leases.LeaseDoc.of(
        _snap(
            {
                "token": "t",
                "expiresAt": AT,
                "attempts": 2,
                "interrupted": 1,
                "lastError": "boom",
                "failed": True,
            }
        )
    )
    assert (lease.token, lease.expires_at, lease.attempts) == ("t", AT, 2)
    assert (lease.interrupted, lease.last_error, lease.failed) == (1, "boom", True)
    assert lease.live(AT - timedelta(seconds=1)) and not lease.live(AT)


def test_lease_doc_of_an_absent_lease_is_nobodys() -> None:
    lease = leases.LeaseDoc.of(_snap(None))
    assert lease == leases.LeaseDoc()
    assert not lease.live(AT) and lease.attempts == 0 and not lease.failed


def test_live_reads_a_snapshot() -> None:
    snap = _snap({"token": "t", "expiresAt": AT})
    assert leases.live(snap, AT - timedelta(seconds=5))
    assert not leases.live(snap, AT + timedelta(seconds=5))


def test_lease_doc_writes_under_the_liveness_fields() -> None:
    written = leases.LeaseDoc(token="t", expires_at=AT).to_firestore()
    assert set(leases.LIVENESS_FIELDS) <= set(written)


# --- functions.deadline -------------------------------------------------------------------


def test_no_deadline_outside_an_invocation() -> None:
    assert deadline.deadline() is None and deadline.remaining() is None


def test_running_for_keeps_the_safety_margin_back() -> None:
    before = time.monotonic()
    with deadline.running_for(60):
        end = deadline.deadline()
        left = deadline.remaining()
    assert end is not None and left is not None
    assert before + 50 - 1 <= end <= time.monotonic() + 50
    assert 49 <= left <= 50
    assert deadline.deadline() is None


def test_running_for_a_short_timeout_leaves_at_least_a_second() -> None:
    with deadline.running_for(3):
        left = deadline.remaining()
    assert left is not None and 0.9 <= left <= 1.0
