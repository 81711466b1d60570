"""The local trigger runtime against the real emulators, driven by probe functions.

The probes (tests/functions/) record every event they receive; the runtime under test runs them
through functions-framework exactly as it runs the real registry.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.cloud import firestore

from emulator import pubsub as runtime_pubsub
from emulator.chaos import ChaosSettings
from emulator.runtime import LocalRuntime
from functions import pubsub

pytestmark = pytest.mark.emulator

PROBES = Path(__file__).resolve().parents[1] / "functions"
sys.path.insert(0, str(PROBES))
import probe  # noqa: E402

PROBE_SOURCE = PROBES / "probe_main.py"
ITEM = "groups/g1/items/a"


@pytest.fixture(scope="module")
def rt() -> Iterator[LocalRuntime]:
    with LocalRuntime(
        project="demo-probe", registry=probe.PROBE_REGISTRY, source=PROBE_SOURCE
    ) as runtime:
        yield runtime


@pytest.fixture
def db(rt: LocalRuntime) -> Iterator[firestore.Client]:
    client = firestore.Client(project=rt.project)
    yield client
    client.close()


@pytest.fixture(autouse=True)
def _clean(rt: LocalRuntime) -> None:
    rt.reset()
    probe.clear()


def outcomes(rt: LocalRuntime, function: str) -> list[str]:
    return [r.outcome for r in rt.deliveries if r.function == function]


def test_each_event_type_arrives_once_with_params_before_and_after(
    rt: LocalRuntime, db: firestore.Client
) -> None:
    doc = db.document(ITEM)
    doc.set({"n": 1})
    doc.set({"n": 2})
    doc.delete()
    rt.wait_until_idle()

    params = {"groupId": "g1", "itemId": "a"}
    expected = {
        "created": [(None, {"n": 1})],
        "updated": [({"n": 1}, {"n": 2})],
        "deleted": [({"n": 2}, None)],
        "written": [(None, {"n": 1}), ({"n": 1}, {"n": 2}), ({"n": 2}, None)],
    }
    for kind, changes in expected.items():
        calls = probe.calls_of(kind)
        assert sorted((repr(c.event.before), repr(c.event.after)) for c in calls) == sorted(
            (repr(before), repr(after)) for before, after in changes
        ), kind
        for call in calls:
            assert call.event.params == params
            assert call.event.document == ITEM
            assert call.event.type == f"google.cloud.firestore.document.v1.{kind}"
    ids = [c.event.id for c in probe.calls]
    assert len(ids) == len(set(ids)) == 6


def test_cloud_event_as_functions_framework_delivers_it(
    rt: LocalRuntime, db: firestore.Client
) -> None:
    db.document("raw/r1").set({"s": "x"})
    rt.wait_until_idle()

    [call] = probe.calls_of("raw")
    attributes, data = call.event["attributes"], call.event["data"]
    assert (
        attributes["source"]
        == f"//firestore.googleapis.com/projects/{rt.project}/databases/(default)"
    )
    assert attributes["type"] == "google.cloud.firestore.document.v1.written"
    assert attributes["document"] == "raw/r1"
    assert attributes["datacontenttype"] == "application/protobuf"
    assert isinstance(data, bytes)


def test_phantom_and_noop_events_are_dropped(rt: LocalRuntime, db: firestore.Client) -> None:
    db.document("groups/g1/items/missing").delete()
    doc = db.document(ITEM)
    doc.set({"n": 1})
    doc.set({"n": 1})
    rt.wait_until_idle()

    assert [c.event.after for c in probe.calls_of("created")] == [{"n": 1}]
    assert [c.event.after for c in probe.calls_of("written")] == [{"n": 1}]
    assert probe.calls_of("updated") == []
    assert sorted(outcomes(rt, "probeCreated")) == ["dropped:phantom", "ok"]
    assert outcomes(rt, "probeUpdated") == ["dropped:no-op update"]
    assert sorted(outcomes(rt, "probeWritten")) == ["dropped:no-op update", "dropped:phantom", "ok"]


def test_reset_deletes_data_and_fires_nothing(rt: LocalRuntime, db: firestore.Client) -> None:
    for item in ("a", "b"):
        db.document(f"groups/g1/items/{item}").set({"n": 1})
    rt.wait_until_idle()
    probe.clear()

    rt.reset()
    rt.wait_until_idle()

    assert not db.document(ITEM).get().exists
    assert probe.calls == []
    assert {r.outcome for r in rt.deliveries} == {"dropped:reset"}
    assert sorted(r.function for r in rt.deliveries) == sorted(["probeDeleted", "probeWritten"] * 2)


def test_concurrent_mode_runs_handlers_in_parallel(rt: LocalRuntime, db: firestore.Client) -> None:
    for i in range(4):
        db.document(f"slow/s{i}").set({"sleep": 1.0})
    rt.wait_until_idle()

    calls = probe.calls_of("slow")
    assert len(calls) == 4
    assert max(c.started for c in calls) < min(c.ended for c in calls)  # all four overlapped


def test_serial_mode_runs_one_at_a_time_in_commit_order(rt: LocalRuntime) -> None:
    with LocalRuntime(
        project="demo-probe-serial",
        mode="serial",
        registry=probe.PROBE_REGISTRY,
        source=PROBE_SOURCE,
    ) as serial:
        client = firestore.Client(project=serial.project)
        for i in range(3):
            client.document(f"slow/s{i}").set({"sleep": 0.3})
        serial.wait_until_idle()
        client.close()

    calls = probe.calls_of("slow")
    assert [c.event.document for c in calls] == ["slow/s0", "slow/s1", "slow/s2"]
    for earlier, later in itertools.pairwise(calls):
        assert later.started >= earlier.ended


def test_pubsub_message_reaches_its_function_once_and_is_acked(rt: LocalRuntime) -> None:
    message_id = pubsub.publish(probe.TOPIC, {"hello": "world"}, origin="test")
    rt.wait_until_idle()  # returns only once the message is acked
    time.sleep(0.5)  # a nacked or unacked message would come back

    [call] = probe.calls_of("message")
    assert call.event.id == message_id
    assert call.event.topic == probe.TOPIC
    assert call.event.json() == {"hello": "world"}
    assert call.event.attributes == {"origin": "test"}
    assert [(r.event_id, r.outcome) for r in rt.deliveries] == [(message_id, "ok")]


def test_failing_function_is_logged_as_error(rt: LocalRuntime, db: firestore.Client) -> None:
    db.document("fail/f1").set({})
    rt.wait_until_idle()

    [record] = [r for r in rt.deliveries if r.function == "probeFail"]
    assert record.outcome == "error"
    assert record.subject == "fail/f1"
    assert "RuntimeError: probe failure on fail/f1" in record.error
    assert "probeFail" in rt.deliveries_table()


def test_an_unexpected_failure_is_an_error_record_under_its_document(
    rt: LocalRuntime, db: firestore.Client
) -> None:
    """Not only malformed documents: any exception a handler raises is recorded where the
    experimenter looks (then the delivery fails as before)."""
    db.document("experiments/e-fail/fail/f2").set({})
    rt.wait_until_idle()
    [record] = [r for r in rt.deliveries if r.function == "probeFailInExperiment"]
    assert record.outcome == "error"
    [error] = [s.to_dict() for s in db.collection("experiments/e-fail/errors").get()]
    assert (error["document"], error["field"]) == ("experiments/e-fail/fail/f2", "(function)")
    assert error["reason"].startswith("RuntimeError: probe failure")
    assert error["function"] == "probeFailInExperiment"


def test_wait_until_idle_covers_cascades(rt: LocalRuntime, db: firestore.Client) -> None:
    db.document("cascadeStart/c1").set({})
    rt.wait_until_idle()

    [end] = probe.calls_of("cascade_end")
    assert end.event.after == {"from": "cascadeStart/c1"}


def test_wait_until_idle_times_out_with_a_summary(rt: LocalRuntime, db: firestore.Client) -> None:
    db.document("slow/long").set({"sleep": 1.5})
    with pytest.raises(TimeoutError, match=r"running: probeSlow on slow/long"):
        rt.wait_until_idle(timeout=0.5)
    rt.wait_until_idle()
    assert len(probe.calls_of("slow")) == 1


def test_chaos_mode_duplicates_every_event_and_retries_retry_enabled_functions() -> None:
    settings = ChaosSettings(seed=5, duplicate_rate=1.0, max_delay_s=0.05, lost_ack_rate=0.0)
    with LocalRuntime(
        project="demo-probe-chaos",
        mode="chaos",
        chaos=settings,
        registry=probe.PROBE_REGISTRY,
        source=PROBE_SOURCE,
    ) as chaos:
        client = firestore.Client(project=chaos.project)
        for i in range(4):
            client.document(f"groups/g/items/i{i}").set({"i": i})
        message_id = pubsub.publish(probe.FLAKY_TOPIC, {"n": 1})
        chaos.wait_until_idle()  # the flaky message was acked after its retries
        client.close()
        counts = chaos.chaos_run.counts()
        flaky = [r for r in chaos.deliveries if r.function == "probeFlaky"]

    created = [c.event.id for c in probe.calls_of("created")]
    assert len(created) == 8 and all(n == 2 for n in Counter(created).values())
    assert len(probe.calls_of("flaky")) >= 1
    # the probe fails the message's first two calls; the delivery and its duplicate run at once,
    # and the log lists deliveries as they end, so one's retry may end "ok" before the other's
    # "error" is listed (it was, in a loaded run). Every failure was retried to an ok.
    outcomes = Counter(r.outcome for r in flaky)
    assert outcomes["error"] == 2 and flaky[-1].outcome == "ok", [r.outcome for r in flaky]
    assert outcomes["ok"] == sum(r.attempt == 1 for r in flaky)  # each delivery ends in an ok
    assert {r.event_id for r in flaky} == {message_id}
    assert max(r.attempt for r in flaky) >= 2  # the runtime retried, not only Pub/Sub
    assert counts["retried"] >= 2 and counts["duplicated"] >= 5


def test_a_runtime_restarted_on_the_same_project_gets_every_message_at_once() -> None:
    for round_ in range(3):
        with LocalRuntime(
            project="demo-probe-restart", registry=probe.PROBE_REGISTRY, source=PROBE_SOURCE
        ) as again:
            probe.clear()
            for i in range(10):
                pubsub.publish(probe.TOPIC, {"round": round_, "i": i})
            again.wait_until_idle(timeout=20)  # a message on a stale stream takes 60 s
            assert len(probe.calls_of("message")) == 10


def test_a_message_whose_function_outlasts_its_ack_deadline_is_leased_not_sent_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runtime_pubsub, "ACK_DEADLINE_S", 10)  # the least Pub/Sub allows
    monkeypatch.setattr(runtime_pubsub, "LEASE_EVERY_S", 1.0)
    with LocalRuntime(
        project="demo-probe-lease", registry=probe.PROBE_REGISTRY, source=PROBE_SOURCE
    ) as leased:
        probe.clear()
        message_id = pubsub.publish(probe.TOPIC, {"sleep": 13})
        leased.wait_until_idle(timeout=60)
        time.sleep(1)  # a message sent again would be on its way
        assert [c.event.id for c in probe.calls_of("message")] == [message_id]
        assert outcomes(leased, "probeMessage") == ["ok"]
