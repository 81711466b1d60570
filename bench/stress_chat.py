"""Stress script (issue 11, "Must show"): a threaded group chat of 6 agents and a mediator, run
again and again on a fake 300 ms model, half of the runs under chaos delivery.

python -m bench.stress_chat                              # 20 runs: 10 plain, then 10 under chaos
python -m bench.stress_chat --runs 4 --chaos-runs 2 --seed 3 --out /tmp/stress.json
python -m bench --only stress                            # the same, as a section of the benchmark
python -m bench.stress_chat --runs 3 --chaos-runs 0 --policy claim   # the claim policy

Each run is a new experiment on a runtime of its own (intro, chat with three threads, end; the
chat waits for all participants). The script does nothing but let time pass: it ticks the
watchdog every ``--tick-seconds`` (as Cloud Scheduler would) until every agent is SUCCESS or the
run's time limit passes. The watchdog counts an agent as idle only after ``--idle-seconds``
(default 10 s, over the 5 s silence limit on purpose): a conversation that only the watchdog can
restart shows as a gap over 5 s instead of being hidden by an eager watchdog.

It is a script and not a timed test: what it measures depends on the machine's load, and a run
that finds a problem should be described (run, seed, ids), not retried until green.

Per run, from the documents and the runtime's delivery log:

- every agent SUCCESS within the time limit;
- the longest silence: the gap between consecutive chat messages by their create times;
- failed deliveries (outcome ``error``); under chaos reported apart, injected faults cause some;
- replies in the wrong thread: an agent message whose ``discussionId`` is not the thread current
  when it was written, the current thread being reconstructed from the thread-switch
  announcements in commit order; and elected replies whose trigger was in another thread;
- replies after leaving: an agent message after its author's own "has left the chat" notice;
- the reply overhead (issue 18): message -> reply above the model's own latency, median and
  p90 over the run's replies (``reply_overheads``);
- duplicates: the rules of ``check_no_message_twice`` (tests/integration/chat_docs.py), counted
  instead of asserted: each agent message has one response slot and at most one election, the
  ones never elected are openings (one per agent), no message id twice.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import itertools
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.rtt_proxy import add_rtt_argument

DEFAULT_OUT = Path(__file__).resolve().parent / "stress_results.json"


@dataclasses.dataclass(frozen=True)
class Options:
    runs: int = 10
    chaos_runs: int = 10
    seed: int = 0
    workers: int = 8
    max_responses: int = 5
    """Per agent over the whole chat (every thread): small enough that agents run out and the
    'nobody may answer' path (issue 11, item 8) is exercised."""
    tick_s: float = 2.0
    idle_s: float = 10.0
    limit_s: float = 240.0
    policy: str = "race"
    """The chat's election policy (``race`` or ``claim``)."""


def _parser() -> argparse.ArgumentParser:
    defaults = Options()
    p = argparse.ArgumentParser(
        prog="python -m bench.stress_chat", description=__doc__.split("\n")[0]
    )
    p.add_argument("--runs", type=int, default=defaults.runs, help="plain runs")
    p.add_argument("--chaos-runs", type=int, default=defaults.chaos_runs, help="runs under chaos")
    p.add_argument("--seed", type=int, default=defaults.seed, help="fake replies and chaos")
    p.add_argument("--workers", type=int, default=defaults.workers, help="runtime workers")
    p.add_argument("--max-responses", type=int, default=defaults.max_responses)
    p.add_argument("--tick-seconds", type=float, default=defaults.tick_s, help="watchdog ticks")
    p.add_argument(
        "--idle-seconds", type=float, default=defaults.idle_s, help="the watchdog's idle time"
    )
    p.add_argument("--limit-seconds", type=float, default=defaults.limit_s, help="per run")
    p.add_argument(
        "--policy", choices=("race", "claim"), default=defaults.policy, help="election policy"
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    p.add_argument("-v", "--verbose", action="store_true", help="log the runtime's warnings")
    add_rtt_argument(p)
    return p


if __name__ == "__main__":
    _parser().parse_args()  # --help and bad arguments answer before the stack is imported

from google.cloud import firestore  # noqa: E402

from bench.fake_model import API_TYPE, fake_model  # noqa: E402
from bench.report import stress_summary  # noqa: E402
from bench.stack import Stack, env, epoch, machine, percentile, say  # noqa: E402
from emulator.chaos import ChaosSettings  # noqa: E402
from emulator.delivery import DeliveryRecord  # noqa: E402
from emulator.runtime import LocalRuntime  # noqa: E402
from functions.chat.messages import LEFT_CHAT_FIELD  # noqa: E402

# The chat tests write a threaded chat with a mediator as raw documents; reuse them as they are.
# They import each other as top-level modules (pytest puts their folder on the path), so do the
# same here.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))
from chat_docs import (  # noqa: E402
    NOT_ELECTIONS,
    add_mediator,
    all_done,
    chat_experiment,
    persona_prompt,
)
from raw_docs import agent  # noqa: E402

AGENTS = 6
LATENCY_S = 0.3
SILENCE_LIMIT_S = 5.0
THREADS = [
    {"id": "t1", "type": "DEFAULT", "description": "Which project should the town fund first?"},
    {"id": "t2", "type": "DEFAULT", "description": "How should it be paid for?"},
    {"id": "t3", "type": "DEFAULT", "description": "Who should run it?"},
]
COHORT = "cohort-a"
log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Message:
    id: str
    type: str
    sender: str
    discussion: str | None
    committed: float
    """Epoch seconds of the document's create time: the order the chat really had."""
    data: dict[str, Any]

    @property
    def is_agent_reply(self) -> bool:
        return self.type in ("participant", "mediator") and not self.data.get("isError")


def _messages(db: firestore.Client, base: str) -> list[Message]:
    out = [
        Message(
            snap.id,
            d.get("type", ""),
            d.get("senderId", ""),
            d.get("discussionId"),
            epoch(snap.create_time) or 0.0,
            d,
        )
        for snap in db.collection(f"{base}/chats").get()
        for d in [snap.to_dict() or {}]
    ]
    return sorted(out, key=lambda m: m.committed)


def _is_switch(m: Message) -> bool:
    """A thread-switch announcement (readiness.advance_thread): a system message that is neither
    a departure nor the timer's end, nor a skipped-turn notice."""
    extra = m.data
    return (
        m.type == "system"
        and not extra.get(LEFT_CHAT_FIELD)
        and not extra.get("timerEnded")
        and "moved on to the next topic" in extra.get("message", "")
    )


def _short(m: Message, t0: float) -> dict[str, Any]:
    return {
        "id": m.id,
        "type": m.type,
        "sender": m.sender,
        "discussionId": m.discussion,
        "at": round(m.committed - t0, 2),
        "text": str(m.data.get("message", ""))[:60],
    }


def _longest_gap(messages: list[Message], t0: float) -> dict[str, Any]:
    best: dict[str, Any] = {"seconds": 0.0}
    for a, b in itertools.pairwise(messages):
        gap = b.committed - a.committed
        if gap > best["seconds"]:
            best = {"seconds": round(gap, 2), "after": _short(a, t0), "before": _short(b, t0)}
    return best


def _silence_evidence(
    gap: dict[str, Any],
    messages: list[Message],
    logs: dict[str, dict[str, Any]],
    public: dict[str, Any],
    records: list[DeliveryRecord],
    t0: float,
) -> dict[str, Any]:
    """What the chat looked like during a silence over the limit, so it can be reported: who
    had spoken how often, who had left, who was marked ready for the thread and when, the
    readiness asks (``ready-*`` locks) and the deliveries that ran during it."""
    start, end = t0 + gap["after"]["at"], t0 + gap["before"]["at"]
    before = [m for m in messages if m.committed <= start]
    thread = gap["after"]["discussionId"]
    marks = (public.get("discussionTimestampMap") or {}).get(thread) or {}

    def at(value: Any) -> float | None:
        stamp = epoch(value)
        return None if stamp is None else round(stamp - t0, 2)

    return {
        "repliesSoFar": dict(
            collections.Counter(f"{m.type}:{m.sender}" for m in before if m.is_agent_reply)
        ),
        "leftSoFar": [m.data[LEFT_CHAT_FIELD] for m in before if m.data.get(LEFT_CHAT_FIELD)],
        "readyMarks": {who: at(when) for who, when in sorted(marks.items())},
        "readinessAsks": sorted(
            (at(r.get("timestamp")), i) for i, r in logs.items() if i.startswith("ready-")
        ),
        "deliveriesDuring": dict(
            collections.Counter(
                f"{r.function}:{r.outcome}" for r in records if start < r.started < end
            )
        ),
    }


def _wrong_thread(messages: list[Message], t0: float) -> list[dict[str, Any]]:
    """Agent messages whose thread is not the one announced last before them."""
    current = THREADS[0]["id"]
    out = []
    for m in messages:
        if _is_switch(m):
            current = m.discussion or current
        elif m.is_agent_reply and m.discussion != current:
            out.append({**_short(m, t0), "currentThread": current})
    return out


def _cross_thread(
    messages: list[Message], logs: dict[str, dict[str, Any]], t0: float
) -> list[dict[str, Any]]:
    """Elected replies (``triggerLogs/{trigger}-{type}``) posted in another thread than the
    message they answer: a reply to thread 1 that landed in thread 2 after a switch."""
    by_id = {m.id: m for m in messages}
    out = []
    for log_id, record in logs.items():
        if log_id.startswith(NOT_ELECTIONS) or "messageId" not in record:
            continue
        trigger = by_id.get(log_id.rsplit("-", 1)[0])
        reply = by_id.get(record["messageId"])
        if trigger is None or reply is None or trigger.discussion is None:
            continue
        if reply.discussion != trigger.discussion:
            out.append({**_short(reply, t0), "trigger": _short(trigger, t0)})
    return out


def _after_leaving(messages: list[Message], t0: float) -> list[dict[str, Any]]:
    """Agent messages posted after their author's own "has left the chat" notice."""
    left: dict[str, Message] = {}
    out = []
    for m in messages:
        if m.type == "system" and m.data.get(LEFT_CHAT_FIELD):
            left.setdefault(m.data[LEFT_CHAT_FIELD], m)
        elif m.is_agent_reply and m.sender in left:
            out.append({**_short(m, t0), "leftNotice": _short(left[m.sender], t0)})
    return out


def _duplicates(messages: list[Message], logs: dict[str, dict[str, Any]]) -> list[str]:
    """``check_no_message_twice``'s rules, each broken rule one line."""
    slots = collections.Counter(r["messageId"] for i, r in logs.items() if i.startswith("quota-"))
    elected = collections.Counter(
        reply.id for reply in _answers({m.id: m for m in messages}, logs).values()
    )
    problems = []
    ids = collections.Counter(m.id for m in messages)
    problems += [f"message {i} written {n} times" for i, n in ids.items() if n > 1]
    openings: collections.Counter[str] = collections.Counter()
    for m in messages:
        if not m.is_agent_reply:
            continue
        if slots[m.id] != 1:
            problems.append(f"{m.id} ({m.sender}) has {slots[m.id]} response slots")
        if elected[m.id] > 1:
            problems.append(f"{m.id} ({m.sender}) elected {elected[m.id]} times")
        if not elected[m.id]:
            openings[f"{m.type}:{m.sender}"] += 1
    problems += [f"{who} opened {n} times" for who, n in openings.items() if n > 1]
    written = {m.id for m in messages}
    problems += [
        f"election {i} names {r['messageId']}, never written"
        for i, r in logs.items()
        if not i.startswith(NOT_ELECTIONS) and "messageId" in r and r["messageId"] not in written
    ]
    return problems


def _failures(records: list[DeliveryRecord], t0: float) -> list[dict[str, Any]]:
    return [
        {
            "function": r.function,
            "subject": r.subject,
            "eventId": r.event_id,
            "attempt": r.attempt,
            "at": round(r.started - t0, 2),
            "error": (r.error.strip().splitlines() or [""])[-1][:200],
        }
        for r in records
        if r.outcome == "error"
    ]


def _statuses(db: firestore.Client, e: str, ids: list[str]) -> dict[str, str]:
    return {
        p: (db.document(f"experiments/{e}/participants/{p}").get().to_dict() or {}).get(
            "currentStatus", "?"
        )
        for p in ids
    }


def _drive(
    rt: LocalRuntime, db: firestore.Client, e: str, ids: list[str], label: str, opts: Options
) -> tuple[bool, float, int]:
    """Let time pass until every agent is SUCCESS: (done, seconds, watchdog ticks)."""
    done, t0, ticks = all_done(db, e, ids), time.monotonic(), 0
    next_tick, next_say = t0 + opts.tick_s, t0 + 15
    while time.monotonic() - t0 < opts.limit_s:
        if done():
            return True, time.monotonic() - t0, ticks
        time.sleep(0.5)
        now = time.monotonic()
        if now >= next_tick:
            rt.tick()
            ticks += 1
            next_tick = now + opts.tick_s
        if now >= next_say:
            statuses = collections.Counter(_statuses(db, e, ids).values())
            say(f"stress: {label}: {now - t0:.0f} s, {dict(statuses)}")
            next_say = now + 15
    return done(), time.monotonic() - t0, ticks


def _one(stack: Stack, index: int, chaotic: bool, opts: Options) -> dict[str, Any]:
    run_seed = opts.seed * 1000 + index
    label = f"run {index + 1} ({'chaos' if chaotic else 'plain'}, seed {run_seed})"
    settings = ChaosSettings(seed=run_seed) if chaotic else None
    out: dict[str, Any] = {
        "run": index + 1,
        "chaos": chaotic,
        "seed": run_seed,
        "policy": opts.policy,
    }
    if settings:
        out["chaosSettings"] = settings.describe()
    cpu = stack.cpu()
    with (
        stack.runtime(f"stress-{index + 1}", workers=opts.workers) as rt,
        fake_model(LATENCY_S, run_seed),
        env(**{"DLAB_IDLE_AGENT_SECONDS": str(opts.idle_s)}),
    ):
        db = firestore.Client(project=rt.project)
        with rt.chaos(settings) if settings else contextlib.nullcontext() as chaos_run:
            wall0 = time.time()
            e = chat_experiment(db, discussions=THREADS, mediator=False, electionPolicy=opts.policy)
            add_mediator(db, e, api_type=API_TYPE)
            config = persona_prompt(db, e, opts.max_responses, api_type=API_TYPE)
            ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(AGENTS)]
            done, seconds, ticks = _drive(rt, db, e, ids, label, opts)
            try:  # late turns (chaos delays, retries) may still post: let them, then look
                rt.wait_until_idle(timeout=60)
            except TimeoutError as exc:
                out["notIdle"] = str(exc).splitlines()[0]
            if chaos_run is not None:
                out["chaosInjected"] = chaos_run.counts()
        out.update(_analyse(db, e, ids, rt, wall0))
        out["replyOverheadMs"] = reply_overheads(db, e, ids, opts.policy)
        out.update(
            {
                "experimentId": e,
                "project": rt.project,
                "allSuccess": done,
                "seconds": round(seconds, 1),
                "ticks": ticks,
            }
        )
        if not done:
            out["deliveriesTail"] = rt.deliveries_table(last=15)
        db.close()
    out["cpu"] = cpu.stop()["machineShare"]
    out["ok"] = _ok(out)
    return out


def _analyse(
    db: firestore.Client, e: str, ids: list[str], rt: LocalRuntime, t0: float
) -> dict[str, Any]:
    base = f"experiments/{e}/cohorts/{COHORT}/publicStageData/chat"
    messages = _messages(db, base)
    logs = trigger_logs(db, e, base)
    replies = [m for m in messages if m.is_agent_reply]
    errors = db.collection(f"experiments/{e}/errors").get()
    gap = _longest_gap(messages, t0)
    if gap["seconds"] > SILENCE_LIMIT_S:
        public = db.document(base).get().to_dict() or {}
        gap["evidence"] = _silence_evidence(gap, messages, logs, public, rt.deliveries, t0)
    return {
        "statuses": dict(collections.Counter(_statuses(db, e, ids).values())),
        "messages": len(messages),
        "agentReplies": sum(1 for m in replies if m.type == "participant"),
        "mediatorReplies": sum(1 for m in replies if m.type == "mediator"),
        "errorMessages": sum(1 for m in messages if m.data.get("isError")),
        "threadSwitches": [m.discussion for m in messages if _is_switch(m)],
        "leftNotices": sum(1 for m in messages if m.data.get(LEFT_CHAT_FIELD)),
        "firstMessageAfter": round(messages[0].committed - t0, 2) if messages else None,
        "longestSilence": gap,
        "failedDeliveries": _failures(rt.deliveries, t0),
        "deliveries": len(rt.deliveries),
        "errorRecords": [
            {k: (s.to_dict() or {}).get(k) for k in ("kind", "message", "participantId")}
            for s in errors
        ],
        "wrongThread": _wrong_thread(messages, t0),
        "crossThread": _cross_thread(messages, logs, t0),
        "afterLeaving": _after_leaving(messages, t0),
        "duplicates": _duplicates(messages, logs),
    }


def reply_overheads(db: firestore.Client, e: str, ids: list[str], policy: str) -> dict[str, Any]:
    """Message -> reply above the model's own latency (issue 18: at most 150 ms), per reply to
    a message: the reply's create time - the message's - the fake model's latency, once per
    model call made for that message by agents of the reply's type before it (under claim,
    agents that declined first ran one after the other; under race they ran side by side,
    so one). Openings and replies nobody elected are left out."""
    base = f"experiments/{e}/cohorts/{COHORT}/publicStageData/chat"
    by_id = {m.id: m for m in _messages(db, base)}
    logs = trigger_logs(db, e, base)
    calls = _model_calls(db, e, ids)
    out = []
    for log_id, reply in _answers(by_id, logs).items():
        trigger_id, _, kind = log_id.rpartition("-")
        trigger = by_id[trigger_id]
        made = [t for t in calls.get((trigger_id, kind), []) if t <= reply.committed]
        models = max(len(made), 1) if policy == "claim" else 1
        out.append((reply.committed - trigger.committed - models * LATENCY_S) * 1000)
    return _overhead_figures([round(ms, 1) for ms in out])


def _overhead_figures(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "p50": _rounded(percentile(values, 50)),
        "p90": _rounded(percentile(values, 90)),
        "valuesMs": sorted(values),
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _model_calls(db: firestore.Client, e: str, ids: list[str]) -> dict[tuple[str, str], list]:
    """When each chat reply's model call was logged, by (message answered, agent type)."""
    calls: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    fields = ["description", "privateId", "createdTimestamp"]
    for snap in db.collection(f"experiments/{e}/logs").select(fields).get():
        data = snap.to_dict() or {}
        what = str(data.get("description", ""))
        if " reply to " not in what:
            continue
        kind = "participant" if data.get("privateId") in ids else "mediator"
        calls[(what.rsplit(" reply to ", 1)[1], kind)].append(
            epoch(data.get("createdTimestamp")) or 0.0
        )
    return calls


def trigger_logs(db: firestore.Client, e: str, base: str) -> dict[str, dict[str, Any]]:
    """The chat's trigger logs, by id. A claim taken beside its turn's first reads names its
    agent by type and private id (the profile, and with it the public id, is read in the same
    round trip): its public id is filled in from the agent's document, for ``_answers``."""
    logs = {s.id: s.to_dict() or {} for s in db.collection(f"{base}/triggerLogs").get()}
    if all("publicId" in r or "privateId" not in r for r in logs.values()):
        return logs
    public = {
        (kind, snap.id): (snap.to_dict() or {}).get("publicId")
        for kind in ("participant", "mediator")
        for snap in db.collection(f"experiments/{e}/{kind}s").select(["publicId"]).get()
    }
    for record in logs.values():
        if "publicId" not in record and "privateId" in record:
            record["publicId"] = public.get((record.get("agentType"), record["privateId"]))
    return logs


def _answers(messages: dict[str, Message], logs: dict[str, dict[str, Any]]) -> dict[str, Message]:
    """The reply each election or claim led to, by lock id: the one an election (race) names;
    for a claim (which records who, not which message), the claimer's first reply after the
    claimed message not taken by an earlier claim of its."""
    out: dict[str, Message] = {}
    taken: set[str] = set()
    claims = []
    for log_id, record in logs.items():
        trigger = messages.get(log_id.rpartition("-")[0])
        if log_id.startswith(NOT_ELECTIONS) or trigger is None:
            continue
        if "messageId" in record:
            if record["messageId"] in messages:
                out[log_id] = messages[record["messageId"]]
        else:
            claims.append((trigger.committed, log_id, record.get("publicId")))
    for at, log_id, claimer in sorted(claims):
        reply = min(
            (
                m
                for m in messages.values()
                if m.is_agent_reply
                and m.sender == claimer
                and m.committed > at
                and m.id not in taken
            ),
            key=lambda m: m.committed,
            default=None,
        )
        if reply is not None:
            out[log_id] = reply
            taken.add(reply.id)
    return out


def _ok(run: dict[str, Any]) -> bool:
    """The issue's bar; failed deliveries count only outside chaos."""
    return (
        run["allSuccess"]
        and run["longestSilence"]["seconds"] <= SILENCE_LIMIT_S
        and (run["chaos"] or not run["failedDeliveries"])
        and not run["wrongThread"]
        and not run["crossThread"]
        and not run["afterLeaving"]
        and not run["duplicates"]
    )


def _line(r: dict[str, Any]) -> str:
    return (
        f"run {r['run']} ({'chaos' if r['chaos'] else 'plain'}, seed {r['seed']}): "
        f"{'OK' if r['ok'] else 'FAILED'}; success {r['allSuccess']} in {r['seconds']} s, "
        f"{r['messages']} messages, longest silence {r['longestSilence']['seconds']} s, "
        f"{len(r['failedDeliveries'])} failed deliveries, {len(r['wrongThread'])} wrong thread, "
        f"{len(r['crossThread'])} cross-thread, {len(r['afterLeaving'])} after leaving, "
        f"{len(r['duplicates'])} duplicates; reply overhead above the model p50 "
        f"{r['replyOverheadMs']['p50']} ms, p90 {r['replyOverheadMs']['p90']} ms "
        f"({r['replyOverheadMs']['n']} replies, {r['policy']})"
    )


def totals(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures the issue asks for, over all runs."""
    plain = [r for r in runs if not r["chaos"]]
    chaotic = [r for r in runs if r["chaos"]]
    silences = [r["longestSilence"]["seconds"] for r in runs]
    overheads = [ms for r in runs for ms in r["replyOverheadMs"]["valuesMs"]]
    return {
        "runs": len(runs),
        "plainRuns": len(plain),
        "chaosRuns": len(chaotic),
        "ok": sum(1 for r in runs if r["ok"]),
        "allSuccess": sum(1 for r in runs if r["allSuccess"]),
        "longestSilenceSeconds": max(silences, default=None),
        "runsWithSilenceOver5s": sum(1 for s in silences if s > SILENCE_LIMIT_S),
        "failedDeliveriesPlain": sum(len(r["failedDeliveries"]) for r in plain),
        "failedDeliveriesChaos": sum(len(r["failedDeliveries"]) for r in chaotic),
        "wrongThread": sum(len(r["wrongThread"]) for r in runs),
        "crossThread": sum(len(r["crossThread"]) for r in runs),
        "afterLeaving": sum(len(r["afterLeaving"]) for r in runs),
        "duplicates": sum(len(r["duplicates"]) for r in runs),
        "replyOverheadMs": _overhead_figures(overheads),
    }


def run(
    stack: Stack,
    *,
    seed: int,
    workers: int,
    runs: int = 10,
    chaos_runs: int = 10,
    on_run: Callable[[dict[str, Any]], None] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """``runs`` plain runs, then ``chaos_runs`` under chaos; the benchmark section.
    ``on_run`` gets the section so far after each run (the script saves it: a long run stopped
    halfway keeps its figures)."""
    opts = Options(runs=runs, chaos_runs=chaos_runs, seed=seed, workers=workers, **options)
    say(
        f"stress: {opts.runs} plain + {opts.chaos_runs} chaos runs, {AGENTS} agents + mediator, "
        f"{len(THREADS)} threads, fake {LATENCY_S * 1000:.0f} ms model"
    )
    results: list[dict[str, Any]] = []
    section: dict[str, Any] = {
        "options": dataclasses.asdict(opts),
        "agents": AGENTS,
        "threads": [t["id"] for t in THREADS],
        "latencyMs": LATENCY_S * 1000,
        "silenceLimitSeconds": SILENCE_LIMIT_S,
        "runs": results,
    }
    for i in range(opts.runs + opts.chaos_runs):
        result = _one(stack, i, i >= opts.runs, opts)
        say("stress: " + _line(result))
        results.append(result)
        section["totals"] = totals(results)
        if on_run is not None:
            on_run(section)
    section["totals"] = totals(results)
    return section


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.verbose else logging.ERROR,
        format="%(levelname)s %(name)s: %(message)s",
    )
    t0 = time.monotonic()
    results: dict[str, Any] = {
        "command": "python -m bench.stress_chat "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine(),
        "rttMs": args.rtt_ms,
    }

    def save(section: dict[str, Any]) -> None:
        results.update(section, elapsedSeconds=round(time.monotonic() - t0, 1))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2, default=str) + "\n")

    say("starting the Firestore and Pub/Sub emulators ...")
    with Stack(rtt_ms=args.rtt_ms) as stack:
        section = run(
            stack,
            seed=args.seed,
            workers=args.workers,
            runs=args.runs,
            chaos_runs=args.chaos_runs,
            max_responses=args.max_responses,
            tick_s=args.tick_seconds,
            idle_s=args.idle_seconds,
            limit_s=args.limit_seconds,
            policy=args.policy,
            on_run=save,
        )
    save(section)
    print()
    print(stress_summary(section))
    print(f"\nWrote {args.out} ({results['elapsedSeconds']} s in all).")
    return 0 if section["totals"]["ok"] == section["totals"]["runs"] else 1


if __name__ == "__main__":
    sys.exit(main())
