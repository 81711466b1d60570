"""Where the reply overhead goes: the chat stress's message -> reply time, split into segments.

python -m bench.reply_path                          # race then claim, 2 plain runs each
python -m bench.reply_path --runs 1 --policy claim --out /tmp/reply_path.json
python -m bench.reply_path --rtt-ms 10                # 10 ms per Firestore / Pub/Sub round trip

Runs ``bench.stress_chat``'s plain runs as they are (6 agents + mediator, three threads, fake
300 ms model) and, for every reply ``reply_overheads`` counts (an elected or claimed reply to a
message), follows the message to the reply through the runtime's delivery log:

1. ``delivery``: the message's create time -> the runtime receiving its ``onChatMessageCreated``
   event (the Firestore emulator's trigger POST to the runtime's receiver);
2. ``fanoutQueue``: that delivery waiting for a worker;
3. ``fanoutRun``: the fan-out's run (it publishes the agent turns and waits for their ids);
4. ``pubsubHop``: the fan-out's end -> the replying agent's ``onAgentTurn`` received (under
   claim, every hop of the order up to the agent that answered: fan-out -> first turn, each
   declining turn's end -> the next turn);
5. ``turnQueue``: those turns waiting for a worker;
6. ``turnRun``: those turns' run up to the reply's commit call, minus the model's latency
   (300 ms per model call counted as ``reply_overheads`` counts them);
7. ``commit``: the reply's commit call -> the reply's create time (the emulator's commit time).

The segments add up to ``total`` (= ``reply_overheads``'s figure). Also per reply, not in the
total: ``publishToReceived`` (the turn message's publish acknowledged in the fan-out -> the
turn received: the Pub/Sub emulator and the runtime's streaming pull), ``afterCommit`` (the
turn's run after the reply's commit call returned) and the typing delay the config asks for.

What the bench adds to see this, outside ``functions/``: a delivery policy that is the
production policy (each event once, at once) and keeps each ``onAgentTurn`` message's body (a
Pub/Sub delivery's subject is the topic, not the message answered); a publish observer
(``functions.pubsub.add_observer``) for the publish times; and a wrapper of
``WriteBatch.commit`` and ``Transaction._commit`` (this process: the stress runtime runs the
functions on threads) for the commit call's times of the documents they write.
"""

from __future__ import annotations

import argparse
import base64
import collections
import contextlib
import dataclasses
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from bench.rtt_proxy import add_rtt_argument

DEFAULT_OUT = Path(__file__).resolve().parent / "reply_path_results.json"


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.reply_path", description=__doc__.split("\n")[0]
    )
    p.add_argument("--runs", type=int, default=2, help="plain stress runs per policy")
    p.add_argument(
        "--policy", choices=("race", "claim"), action="append", help="default: race, then claim"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=8, help="runtime workers")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    add_rtt_argument(p)
    return p.parse_args(argv)


if __name__ == "__main__":
    _args(None)  # --help and bad arguments answer before the stack is imported

from google.cloud import firestore  # noqa: E402
from google.cloud.firestore_v1.batch import WriteBatch  # noqa: E402
from google.cloud.firestore_v1.transaction import Transaction  # noqa: E402

from bench import stress_chat  # noqa: E402
from bench.stack import Stack, env, machine, percentile, say  # noqa: E402
from emulator.delivery import Delivery, DeliveryRecord  # noqa: E402
from emulator.dispatcher import Policy  # noqa: E402
from emulator.runtime import LocalRuntime  # noqa: E402
from functions import firestore_api  # noqa: E402
from functions import pubsub as function_pubsub  # noqa: E402
from functions.agents.model_call import ask as _ask  # noqa: E402
from functions.chat import turn as chat_turn  # noqa: E402
from functions.pubsub import publish_all as _publish_all  # noqa: E402

FANOUT = "onChatMessageCreated"
TURN = "onAgentTurn"
SEGMENTS = (
    "delivery",
    "fanoutQueue",
    "fanoutRun",
    "pubsubHop",
    "turnQueue",
    "turnRun",
    "commit",
)
EXTRAS = (
    "fanoutPublish",
    "publishToReceived",
    "beforeModel",
    "modelClient",
    "afterModel",
    "earlierTurns",
    "earlierModelCalls",
    "afterCommit",
    "turnsRun",
)
LABELS = {
    "delivery": "1. message created -> fan-out event received (Firestore emulator trigger)",
    "fanoutQueue": "2. fan-out queue wait",
    "fanoutRun": "3. fan-out run (onChatMessageCreated)",
    "pubsubHop": "4. fan-out end -> agent turn received (Pub/Sub)",
    "turnQueue": "5. turn queue wait",
    "turnRun": "6. turn run to the reply's commit, minus the model",
    "commit": "7. reply commit call -> reply create time",
    "total": "total (reply overhead above the model)",
    "fanoutPublish": "(3 of which: publishing the turns, publish_all call)",
    "publishToReceived": "(4 of which: turn publish acked -> received)",
    "beforeModel": "(6 of which: replying turn's start -> its model call)",
    "modelClient": "(6 of which: model call's wall time - 300 ms)",
    "afterModel": "(6 of which: model call's end -> the reply's commit call)",
    "earlierTurns": "(6 of which: declining turns before it, minus the replies' model)",
    "earlierModelCalls": "(model calls in those declining turns, any kind: count)",
    "afterCommit": "(not in total: turn run after the commit returned)",
    "turnsRun": "(turns in the chain, claim: declining agents first)",
}
CHAT = f"cohorts/{stress_chat.COHORT}/publicStageData/chat"


# --- what the bench records during a run -----------------------------------------------------


class TurnBodies(Policy):
    """The production policy (each event once, at once), keeping each agent turn's message."""

    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}

    def schedule(self, delivery: Delivery) -> list[tuple[float, Delivery]]:
        if delivery.function == TURN:
            self.bodies[delivery.event_id] = delivery.body
        return super().schedule(delivery)

    def turn(self, event_id: str) -> dict[str, Any]:
        """The AgentTurn JSON of a delivery ({} if not seen)."""
        body = self.bodies.get(event_id)
        if body is None:
            return {}
        data = json.loads(body)["message"]["data"]
        turn: dict[str, Any] = json.loads(base64.b64decode(data))
        return turn


class ProbedStack(Stack):
    """The shared stack, whose runtimes run with ``TurnBodies`` and are kept by project."""

    def __init__(self, rtt_ms: float | None = None) -> None:
        super().__init__(rtt_ms)
        self.probes: dict[str, tuple[LocalRuntime, TurnBodies]] = {}

    def runtime(self, name: str, **options: Any) -> LocalRuntime:
        bodies = TurnBodies()
        rt = super().runtime(name, policy=bodies, **options)
        self.probes[rt.project] = (rt, bodies)
        return rt


@dataclasses.dataclass(frozen=True)
class Commit:
    called: float
    returned: float


class Clocks:
    """Publish acknowledgements by message id; chat message commits by message id; the chat
    turns' model calls by (experiment, agent's private id, call description)."""

    def __init__(self) -> None:
        self.published: dict[str, float] = {}
        self.publish_calls: dict[str, Commit] = {}
        """The ``publish_all`` call (start, end) that published each message id."""
        self.commits: dict[str, Commit] = {}
        self.asks: dict[tuple[str, str, str], list[Commit]] = collections.defaultdict(list)
        self._lock = threading.Lock()

    def _publish_all(self, topic: str, payloads: list[Any], **attributes: str) -> list[str]:
        called = time.time()
        ids = _publish_all(topic, payloads, **attributes)
        done = Commit(called, time.time())
        with self._lock:
            self.publish_calls.update(dict.fromkeys(ids, done))
        return ids

    def _ask(self, site: Any, *args: Any, **kwargs: Any) -> Any:
        called = time.time()
        try:
            return _ask(site, *args, **kwargs)
        finally:
            key = (site.experiment_id, getattr(site.participant, "private_id", ""))
            with self._lock:
                self.asks[(*key, site.description)].append(Commit(called, time.time()))

    def _on_publish(self, topic: str, message_id: str) -> None:
        self.published[message_id] = time.time()

    def _timed(self, original: Any, writes: Any = lambda batch, *_: batch._write_pbs) -> Any:
        """A batch's or a transaction's commit (a post in a discussion thread is a
        transaction begun by its read: ``firestore_api.commit(id, writes)``), timing the chat
        messages it writes; ``writes(*args)``: the call's write protobufs."""

        def commit(*args: Any, **kwargs: Any) -> Any:
            names = [w.update.name for w in writes(*args) if w.update.name]
            called = time.time()
            results = original(*args, **kwargs)
            done = Commit(called, time.time())
            with self._lock:
                for name in names:
                    parent, _, doc = name.rpartition("/")
                    if parent.endswith("/chats"):
                        self.commits[doc] = done
            return results

        return commit

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        function_pubsub.add_observer(self._on_publish)
        try:
            with (
                mock.patch.object(WriteBatch, "commit", self._timed(WriteBatch.commit)),
                mock.patch.object(Transaction, "_commit", self._timed(Transaction._commit)),
                mock.patch.object(
                    firestore_api, "commit", self._timed(firestore_api.commit, lambda _, w: w.pbs)
                ),
                mock.patch.object(chat_turn, "ask", self._ask),
                mock.patch.object(function_pubsub, "publish_all", self._publish_all),
            ):
                yield
        finally:
            function_pubsub.remove_observer(self._on_publish)


# --- the analysis ----------------------------------------------------------------------------


def _received(r: DeliveryRecord) -> float:
    return r.started - r.queued_ms / 1000


def _private_ids(db: firestore.Client, e: str) -> dict[str, str]:
    """Public id -> private id of the agent participants and mediators."""
    out = {}
    for kind in ("participants", "mediators"):
        for snap in db.collection(f"experiments/{e}/{kind}").get():
            data = snap.to_dict() or {}
            out[str(data.get("publicId", snap.id))] = str(data.get("privateId", snap.id))
    return out


def _typing(db: firestore.Client, e: str) -> dict[str, Any]:
    """The ``wordsPerMinute`` of the agents' chat prompts (None: no typing delay)."""
    paths = {
        "participants": f"experiments/{e}/agentParticipants/talker/prompts/chat",
        "mediator": f"experiments/{e}/agentMediators/host/prompts/chat",
    }
    return {
        who: ((db.document(path).get().to_dict() or {}).get("chatSettings") or {}).get(
            "wordsPerMinute"
        )
        for who, path in paths.items()
    }


def replies(
    db: firestore.Client,
    e: str,
    records: list[DeliveryRecord],
    bodies: TurnBodies,
    clocks: Clocks,
    policy: str,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(one row of segments per reply matched, the replies not matched and why)."""
    base = f"experiments/{e}/{CHAT}"
    by_id = {m.id: m for m in stress_chat._messages(db, base)}
    logs = stress_chat.trigger_logs(db, e, base)
    private = _private_ids(db, e)
    ids = [s.id for s in db.collection(f"experiments/{e}/participants").get()]
    calls = stress_chat._model_calls(db, e, ids)
    fanouts: dict[str, DeliveryRecord] = {}
    for r in sorted(records, key=lambda r: r.started):
        if r.function == FANOUT and r.outcome == "ok" and f"/{CHAT}/chats/" in r.subject:
            fanouts.setdefault(r.subject.rsplit("/", 1)[1], r)
    turns: dict[tuple[str, str], list[tuple[DeliveryRecord, str]]] = collections.defaultdict(list)
    for r in records:
        if r.function == TURN and not r.dropped:
            t = bodies.turn(r.event_id)
            if t.get("triggerChatId") and t.get("experimentId") == e:
                turns[(t["triggerChatId"], t["agentType"])].append((r, t["agentId"]))
    rows, unmatched = [], []
    for log_id, reply in stress_chat._answers(by_id, logs).items():
        trigger_id, _, kind = log_id.rpartition("-")
        trigger = by_id[trigger_id]
        made = [t for t in calls.get((trigger_id, kind), []) if t <= reply.committed]
        models = max(len(made), 1) if policy == "claim" else 1
        fan = fanouts.get(trigger_id)
        agent = private.get(reply.sender, reply.sender)
        chain = sorted(turns.get((trigger_id, kind), []), key=lambda x: _received(x[0]))
        own = [r for r, who in chain if who == agent and r.started <= reply.committed]
        if fan is None or not own:
            why = "no fan-out delivery" if fan is None else "no turn of the replying agent"
            unmatched.append({"reply": reply.id, "trigger": trigger_id, "why": why})
            continue
        last = max(own, key=lambda r: r.started)
        if policy == "claim":
            earlier = [(r, who) for r, who in chain if _received(r) < _received(last)]
        else:
            earlier = []
        steps = [r for r, _ in earlier] + [last]
        commit = clocks.commits.get(reply.id)
        cut = commit.called if commit else reply.committed
        hops, previous_end = [], fan.ended
        for r in steps:
            hops.append(_received(r) - previous_end)
            previous_end = r.ended
        row: dict[str, Any] = {
            "reply": reply.id,
            "trigger": trigger_id,
            "kind": kind,
            "models": models,
            "delivery": (_received(fan) - trigger.committed) * 1000,
            "fanoutQueue": fan.queued_ms,
            "fanoutRun": fan.duration_ms,
            "pubsubHop": sum(hops) * 1000,
            "turnQueue": sum(r.queued_ms for r in steps),
            "turnRun": (sum(r.duration_ms for r in steps[:-1]) + (cut - last.started) * 1000)
            - models * stress_chat.LATENCY_S * 1000,
            "commit": (reply.committed - cut) * 1000,
            "total": (reply.committed - trigger.committed - models * stress_chat.LATENCY_S) * 1000,
            "turnsRun": len(steps),
            "commitSeen": commit is not None,
            "afterCommit": (last.ended - commit.returned) * 1000 if commit else None,
        }
        call = clocks.publish_calls.get(steps[0].event_id)
        if call is not None and fan.started <= call.called <= fan.ended:
            row["fanoutPublish"] = (call.returned - call.called) * 1000
        published = clocks.published.get(last.event_id)
        row["publishToReceived"] = (
            (_received(last) - published) * 1000 if published and len(steps) == 1 else None
        )
        asks = [
            a
            for a in clocks.asks.get((e, agent, f"chat reply to {trigger_id}"), [])
            if last.started <= a.called and a.returned <= cut
        ]
        if asks:
            latency = stress_chat.LATENCY_S * 1000
            row["beforeModel"] = (asks[0].called - last.started) * 1000
            row["modelClient"] = sum((a.returned - a.called) * 1000 - latency for a in asks)
            row["afterModel"] = (cut - asks[-1].returned) * 1000
            row["earlierTurns"] = row["turnRun"] - (
                row["beforeModel"] + row["modelClient"] + row["afterModel"]
            )
        row["earlierModelCalls"] = sum(
            1
            for r, who in earlier
            for key, made in clocks.asks.items()
            if key[:2] == (e, who)
            for a in made
            if r.started <= a.called <= r.ended
        )
        row["residual"] = row["total"] - sum(row[s] for s in SEGMENTS)
        rows.append({k: round(v, 1) if isinstance(v, float) else v for k, v in row.items()})
    return rows, unmatched


def _figures(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    out = {}
    for name in (*SEGMENTS, "total", *EXTRAS):
        values = [float(r[name]) for r in rows if r.get(name) is not None]
        out[name] = {
            "n": len(values),
            "p50": _round(percentile(values, 50)),
            "p90": _round(percentile(values, 90)),
            "mean": _round(sum(values) / len(values)) if values else None,
        }
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def table(policies: dict[str, dict[str, Any]]) -> str:
    """Markdown: p50 / p90 ms of each segment per policy, the replies matched."""
    names = list(policies)
    lines = [
        "| segment | " + " | ".join(f"{p}: p50 / p90 ms" for p in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for seg in (*SEGMENTS, "total", *EXTRAS):
        cells = []
        for p in names:
            f = policies[p]["figures"][seg]
            cells.append(f"{f['p50']} / {f['p90']}" if f["n"] else "-")
        label = f"**{LABELS[seg]}**" if seg == "total" else LABELS[seg]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append(
        "| replies matched / counted by stress_chat | "
        + " | ".join(f"{policies[p]['matched']} / {policies[p]['counted']}" for p in names)
        + " |"
    )
    return "\n".join(lines)


# --- the script ------------------------------------------------------------------------------


def measure(stack: ProbedStack, clocks: Clocks, policy: str, args: argparse.Namespace) -> Any:
    load_before = _load()
    say(f"reply path: {policy}, {args.runs} runs, load average {load_before}")
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    with clocks.watching():
        section = stress_chat.run(
            stack, seed=args.seed, workers=args.workers, runs=args.runs, chaos_runs=0, policy=policy
        )
    load_after = _load()
    rows: list[dict[str, Any]] = []
    runs = []
    with env(FIRESTORE_EMULATOR_HOST=stack.services.firestore.host):
        for run in section["runs"]:
            rt, bodies = stack.probes[run["project"]]
            db = firestore.Client(project=run["project"])
            got, missed = replies(db, run["experimentId"], rt.deliveries, bodies, clocks, policy)
            runs.append(
                {
                    "run": run["run"],
                    "ok": run["ok"],
                    "experimentId": run["experimentId"],
                    "replyOverheadMs": {
                        k: v for k, v in run["replyOverheadMs"].items() if k != "valuesMs"
                    },
                    "seconds": run["seconds"],
                    "allSuccess": run["allSuccess"],
                    "matched": len(got),
                    "unmatched": missed,
                    "typingWordsPerMinute": _typing(db, run["experimentId"]),
                    "figures": _figures(got),
                }
            )
            rows += got
            db.close()
    return {
        "policy": policy,
        "started": started,
        "ended": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "loadAverageBefore": load_before,
        "loadAverageAfter": load_after,
        "counted": section["totals"]["replyOverheadMs"]["n"],
        "matched": len(rows),
        "stressTotals": {
            k: v for k, v in section["totals"].items() if k not in ("replyOverheadMs",)
        },
        "figures": _figures(rows),
        "runs": runs,
        "replies": rows,
    }


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    results: dict[str, Any] = {
        "command": "python -m bench.reply_path " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine(),
        "rttMs": args.rtt_ms,
        "latencyMs": stress_chat.LATENCY_S * 1000,
        "segments": LABELS,
        "policies": {},
    }
    clocks = Clocks()
    say("starting the Firestore and Pub/Sub emulators ...")
    stack = ProbedStack(args.rtt_ms)
    with stack:
        for policy in args.policy or ["race", "claim"]:
            results["policies"][policy] = measure(stack, clocks, policy, args)
            args.out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print()
    print(table(results["policies"]))
    typing = {
        p: sorted({json.dumps(r["typingWordsPerMinute"]) for r in s["runs"]})
        for p, s in results["policies"].items()
    }
    print(f"\nwordsPerMinute (typing delay) per policy: {typing}")
    print(f"Wrote {args.out}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
