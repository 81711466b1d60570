"""The demo experiment under chaos, run and checked: duplicated, delayed (reordered) and retried
deliveries, and model faults (rate limits, outages, garbled replies). ``test_chaos`` runs it on
the session's runtime (functions in-process), ``test_worker_processes`` on worker processes.

Every participant write is observed as the emulator sent it (before chaos), so a stage
transition made twice, or a stage skipped, shows up as an extra or malformed transition rather
than hiding in the final documents. Seed and rates come from ``DLAB_CHAOS_*`` (see README), so the
same test runs any chaos one asks for.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter, defaultdict

from chat_docs import check_no_message_twice
from experiment_state import ANSWER_MODELS, doc, errors, participants, settle, template

from emulator.chaos import ChaosSettings
from functions._events import decode_document_event_data
from shared import paths
from shared.models import ParticipantStatus, UserType
from shared.templates import template_stages
from tools.load_template import load

AGENTS = 3
INJECTED = ("injected fault", "no valid answer")
"""What every recorded error must come from: the scripted model itself never fails."""


class WriteAudit:
    """Participant updates and stage answer writes, as the emulator sent them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.transitions: dict[str, list[tuple[str | None, str, str | None]]] = defaultdict(list)
        """participant → (stage before, stages completed by the write, stage after)."""
        self.answer_writes: Counter[str] = Counter()

    def __call__(self, delivery) -> None:
        if delivery.function not in ("onParticipantUpdated", "onStageDataWritten"):
            return
        before, after, path = decode_document_event_data(delivery.body)
        before, after = before or {}, after or {}
        with self._lock:
            if delivery.function == "onStageDataWritten":
                if after.get("kind") in ANSWER_MODELS:
                    self.answer_writes[path] += 1
                return
            old = set((before.get("timestamps") or {}).get("completedStages") or {})
            new = set((after.get("timestamps") or {}).get("completedStages") or {})
            for stage_id in sorted(new - old):
                params = paths.match(paths.PARTICIPANT, path)
                self.transitions[params["participantId"]].append(
                    (before.get("currentStageId"), stage_id, after.get("currentStageId"))
                )


def _check_moves(audit, agents, stage_ids):
    """Each stage completed exactly once, by a move from it to the next one, in order."""
    expected = [(s, s, n) for s, n in zip(stage_ids, [*stage_ids[1:], None], strict=True)]
    for a in agents:
        assert a.current_status == ParticipantStatus.SUCCESS, a
        assert a.timestamps.end_experiment is not None
        moves = [(b, s, n if n != s else None) for b, s, n in audit.transitions[a.private_id]]
        assert moves == expected, f"{a.public_id} moved {moves}"
        ts = a.timestamps
        for stage_id, next_id in itertools.pairwise(stage_ids):
            assert ts.ready_stages[next_id] == ts.completed_stages[stage_id]


def _check_answers(db, e, audit, agents, stages, recorded):
    """One answer per agent and answered stage, written once (or the fault that prevented it)."""
    for a in agents:
        for s in stages:
            if s.kind not in ANSWER_MODELS:
                continue
            path = f"experiments/{e}/participants/{a.private_id}/stageData/{s.id}"
            data = doc(db, path)
            if data is None:  # moved on without an answer: only after garbled replies
                assert any(a.private_id in r.document and s.id in r.reason for r in recorded)
                continue
            ANSWER_MODELS[s.kind].model_validate(data)
            assert audit.answer_writes[path] == 1, path


def run_demo_under_chaos(runtime, db, monkeypatch):
    """The demo template's agents under chaos (``DLAB_CHAOS_*``, default 50% duplicates and 15%
    model faults): every stage moved once, every answer written once, no chat message twice,
    failures only from injected faults. Returns what was injected."""
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")  # each watchdog tick stands for time passing
    settings = ChaosSettings.from_env(duplicate_rate=0.5, fault_rate=0.15, seed=11)
    tpl = template("demo_all_stages.json")
    audit = WriteAudit()
    with runtime.observing(audit), runtime.chaos(settings) as run:
        result = load(db, tpl, agents=AGENTS, api_type="SCRIPTED", seed=settings.seed)
        e = result.experiment_id
        done = lambda: all(p.timestamps.end_experiment for p in participants(db, e))  # noqa: E731
        settle(runtime, done, rounds=60)
    print(run.describe())

    stages = template_stages(tpl)
    agents = participants(db, e)
    assert len(agents) == AGENTS
    _check_moves(audit, agents, [s.id for s in stages])

    recorded = errors(db, e)
    assert all(any(why in r.reason for why in INJECTED) for r in recorded), recorded
    _check_answers(db, e, audit, agents, stages, recorded)
    chat = next(s.id for s in stages if s.kind == "chat")
    messages = check_no_message_twice(db, e, chat, result.cohort_id)
    left = Counter(m["leftChatBy"] for m in messages if m.get("leftChatBy"))
    assert all(n == 1 for n in left.values()), left
    kinds = {m["type"] for m in messages if m["type"] != UserType.SYSTEM}
    assert kinds == {"participant", "mediator"}, kinds  # a group chat with a mediator

    failed = [d for d in runtime.deliveries if d.outcome == "error"]
    assert all(any(why in d.error for why in INJECTED) for d in failed), failed
    ok = {d.event_id for d in runtime.deliveries if d.outcome == "ok"}
    assert all(d.event_id in ok for d in failed if d.function == "onAgentWake")
    counts = run.counts()
    assert settings.duplicate_rate == 0 or counts["duplicated"] > 0, counts
    assert settings.fault_rate == 0 or sum(
        n for k, n in counts.items() if k.startswith("fault:")
    ), counts
    return counts
