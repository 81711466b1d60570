"""What an experiment costs in Firestore: reads, writes, deletes, transactions and RPCs per stage
move, per agent turn and per chat message, the watchdog's reads per tick, and a cost estimate at
Firestore's list prices beside the model tokens.

Every delivery runs inside ``functions.usage.counting()`` (the same counters the functions log in
production, see the README's *What an experiment costs*), so the figures are billed documents,
not round trips: a query bills one read per document it returns (one when it returns none).

- **moves**: the non-chat transitions experiment (``bench.transitions``) with N agents; per
  stage move = all the functions' operations / stage completions, and per delivery of each
  function (``onParticipantUpdated`` is the move itself, ``onAgentWake`` a wake).
- **chat**: N agents in one group chat (``bench.chat``), race and claim, K messages; per message
  = all operations during the conversation / messages, and per ``onAgentTurn`` delivery.
- **watchdog**: one project with one running chat (6 agents) and F finished experiments (a chat
  with messages, every participant done); the documents one watchdog tick reads, for F = 1 and
  F = 50 (the target: the same).

``python -m bench.cost`` (``--quick`` for small sizes) prints the tables and writes
``bench/cost_results.json``; ``python -m bench --only cost`` runs it as a section.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cost", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent / "cost_results.json"
    )
    parser.add_argument(
        "--config-cache",
        type=float,
        default=0.0,
        help="DLAB_CONFIG_CACHE_SECONDS for the functions (default 0: off)",
    )
    return parser


if __name__ == "__main__":
    _parser().parse_args()  # --help and bad arguments answer before the stack is imported

from google.cloud import firestore  # noqa: E402

import emulator.invoker  # noqa: E402
from bench import chat, transitions  # noqa: E402
from bench.election import _converse  # noqa: E402
from bench.fake_model import scripted_model  # noqa: E402
from bench.stack import Stack, env, machine, say  # noqa: E402
from functions import usage  # noqa: E402
from tools import usage_report  # noqa: E402
from tools.load_template import load  # noqa: E402

PRICES_USD_PER_100K = usage_report.PRICES_USD_PER_100K["nam5"]
"""Firestore Standard edition list prices, multi-region nam5 (us-central1: half of these);
the free daily quota is left out."""
DEFAULT_OUT = _parser().get_default("out")
FIELDS = ("reads", "writes", "deletes", "transactions", "rpcs")


class DeliveryUsage:
    """Usage per function while installed: each delivery runs inside its own counting scope."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_function: dict[str, usage.Usage] = collections.defaultdict(usage.Usage)
        self.deliveries: collections.Counter[str] = collections.Counter()
        self.each: list[tuple[str, str, usage.Usage]] = []
        """Every delivery's function, subject and own usage, in the order they ended."""
        self._saved: Any = None

    def __enter__(self) -> DeliveryUsage:
        original = emulator.invoker.Invoker.invoke
        me = self

        def invoke(invoker: Any, delivery: Any) -> Any:
            with usage.counting() as used:
                try:
                    return original(invoker, delivery)
                finally:
                    with me._lock:
                        me.by_function[delivery.function].add(used)
                        me.deliveries[delivery.function] += 1
                        me.each.append((delivery.function, delivery.subject, used))

        self._saved = original
        emulator.invoker.Invoker.invoke = invoke  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        emulator.invoker.Invoker.invoke = self._saved  # type: ignore[method-assign]

    def clear(self) -> None:
        with self._lock:
            self.by_function.clear()
            self.deliveries.clear()
            self.each.clear()

    def total(self) -> usage.Usage:
        out = usage.Usage()
        for used in self.by_function.values():
            out.add(used)
        return out

    def report(self) -> dict[str, Any]:
        out = {}
        for function, used in sorted(self.by_function.items()):
            n = self.deliveries[function]
            out[function] = {
                "deliveries": n,
                **{f"{k}PerDelivery": round(v / n, 2) for k, v in used.fields().items()},
                "roundTripsPerDelivery": round(used.round_trips / n, 2),
                "publishedPerDelivery": round(used.published / n, 2),
                "byMethod": dict(used.by_method.most_common()),
            }
        return out


def _per(total: usage.Usage, n: int) -> dict[str, float | None]:
    return {k: (round(v / n, 2) if n else None) for k, v in total.fields().items()}


def dollars(total: usage.Usage) -> float:
    return sum(getattr(total, k) * p / 100_000 for k, p in PRICES_USD_PER_100K.items())


def _tokens(db: firestore.Client, experiment_id: str) -> dict[str, int]:
    calls = tokens = 0
    for snap in db.collection(f"experiments/{experiment_id}/logs").select(["response.usage"]).get():
        calls += 1
        used = ((snap.to_dict() or {}).get("response") or {}).get("usage") or {}
        tokens += int(used.get("totalTokens") or 0)
    return {"modelCalls": calls, "modelTokens": tokens}


# --- moves ----------------------------------------------------------------------------------


def moves(stack: Stack, agents: int, seed: int, workers: int) -> dict[str, Any]:
    say(f"cost: moves, {agents} agents")
    t = transitions.template()
    stage_ids = t["experiment"]["stageIds"]
    with (
        DeliveryUsage() as counted,
        stack.runtime(f"cost-moves-{agents}", workers=workers) as rt,
        scripted_model(),
    ):
        db = firestore.Client(project=rt.project)
        t0 = time.time()
        result = load(db, t, agents=agents, api_type="SCRIPTED", seed=seed)
        while True:
            state = transitions._progress(db, result.experiment_id)
            if (
                sum(1 for a in state if (a.get("timestamps") or {}).get("endExperiment"))
                >= (agents)
                or time.time() - t0 > 480
            ):
                break
            time.sleep(0.5)
        wall = time.time() - t0
        rt.wait_until_idle(timeout=600)
        moved = sum(len((a.get("timestamps") or {}).get("completedStages") or {}) for a in state)
        tokens = _tokens(db, result.experiment_id)
        rt.reset()
        db.close()
    total = counted.total()
    out = {
        "agents": agents,
        "stages": len(stage_ids),
        "stageMoves": moved,
        "wallSeconds": round(wall, 1),
        "total": total.fields(),
        "perStageMove": _per(total, moved),
        "publishedPerStageMove": round(total.published / moved, 2) if moved else None,
        "perAgent": _per(total, agents),
        "experimentUsd": round(dollars(total), 5),
        **tokens,
        "byFunction": counted.report(),
    }
    say(f"cost: moves, {agents} agents: {out['perStageMove']} per stage move")
    return out


# --- chat -----------------------------------------------------------------------------------


def chat_run(
    stack: Stack, agents: int, policy: str, k: int, seed: int, workers: int
) -> dict[str, Any]:
    say(f"cost: chat, {agents} agents, {policy}, {k} messages")
    rng = random.Random(seed)
    with (
        DeliveryUsage() as counted,
        stack.runtime(f"cost-chat-{agents}-{policy}", workers=workers) as rt,
        scripted_model(),
    ):
        db = firestore.Client(project=rt.project)
        room = chat.create(db, agents, policy=policy, rng=rng)
        rt.wait_until_idle(timeout=120)
        counted.clear()
        run = _converse(rt, db, room, k, rng, f"cost {agents} {policy}")
        messages = chat.message_count(db, room)
        tokens = _tokens(db, room.experiment_id)
        rt.reset()
        db.close()
    total = counted.total()
    out = {
        "agents": agents,
        "policy": policy,
        "messages": messages,
        **run,
        "total": total.fields(),
        "perMessage": _per(total, messages),
        "publishedPerMessage": round(total.published / messages, 2) if messages else None,
        "usdPer1000Messages": round(dollars(total) / messages * 1000, 4) if messages else None,
        **tokens,
        "byFunction": counted.report(),
    }
    turn = out["byFunction"].get("onAgentTurn", {})
    say(
        f"cost: chat, {agents} agents, {policy}: {out['perMessage']} per message; per turn "
        f"rpcs {turn.get('rpcsPerDelivery')} reads {turn.get('readsPerDelivery')}"
    )
    return out


# --- watchdog -------------------------------------------------------------------------------


def _quiet_timed_chat(db: firestore.Client, agents: int, rng: random.Random) -> chat.ChatRoom:
    """A chat with a 60-minute time limit whose agents never speak (they wait for 1000
    messages), so it stays as it is while the watchdog ticks."""
    room = chat.create(db, agents, rng=rng)
    db.document(f"{room.base}/stages/{chat.STAGE}").update({"timeLimitInMinutes": 60})
    db.document(f"{room.base}/agentParticipants/{chat.PERSONA}/prompts/{chat.STAGE}").update(
        {"chatSettings.minMessagesBeforeResponding": 1000}
    )
    return room


def _finished_experiment(db: firestore.Client, i: int, rng: random.Random) -> None:
    """A finished experiment: a timed chat stage with a few messages, every participant done."""
    room = _quiet_timed_chat(db, 3, rng)
    stamp = dt.datetime.now(dt.UTC) - dt.timedelta(hours=2)
    batch = db.batch()
    for m in range(5):
        batch.set(
            db.document(f"{room.chats_path}/m{m}"),
            {
                "id": f"m{m}",
                "type": "participant",
                "message": "done",
                "senderId": chat.HUMAN,
                "timestamp": stamp,
                "profile": {"name": "human-1", "avatar": "🧑"},
            },
        )
    batch.update(db.document(room.public_path), {"discussionStartTimestamp": stamp})
    for pid in [*room.agent_ids, chat.HUMAN]:
        batch.update(
            db.document(f"{room.base}/participants/{pid}"),
            {"currentStatus": "SUCCESS", "timestamps.endExperiment": stamp},
        )
    batch.commit()


def watchdog(stack: Stack, finished: list[int], seed: int, workers: int) -> dict[str, Any]:
    """Documents read by one tick with one running chat and F finished experiments."""
    rng = random.Random(seed)
    out: dict[str, Any] = {"runs": []}
    for f in finished:
        say(f"cost: watchdog, 1 running chat and {f} finished experiments")
        with (
            DeliveryUsage() as counted,
            stack.runtime(f"cost-watchdog-{f}", workers=workers) as rt,
            scripted_model(),
        ):
            db = firestore.Client(project=rt.project)
            for i in range(f):
                _finished_experiment(db, i, rng)
            room = _quiet_timed_chat(db, 6, rng)
            chat.say_as_human(db, room, "h0", "What matters most here?")
            rt.wait_until_idle(timeout=120)
            per_tick = []
            for _ in range(3):
                counted.clear()
                rt.tick()
                rt.wait_until_idle(timeout=120)
                tick = counted.by_function.get("watchdog", usage.Usage())
                per_tick.append(tick.fields())
            rt.reset()
            db.close()
        reads = [t["reads"] for t in per_tick]
        out["runs"].append(
            {"finishedExperiments": f, "perTick": per_tick, "readsPerTick": min(reads)}
        )
        say(f"cost: watchdog with {f} finished experiments: reads per tick {reads}")
    return out


# --- the section ----------------------------------------------------------------------------


def sizes(quick: bool) -> dict[str, Any]:
    if quick:
        return {"moves": [10], "chat": [(6, "race", 20), (6, "claim", 20)], "finished": [1, 50]}
    return {
        "moves": [10, 100],
        "chat": [(6, "race", 40), (6, "claim", 40), (100, "race", 5), (100, "claim", 30)],
        "finished": [1, 50],
    }


def run(stack: Stack, seed: int, workers: int, quick: bool = False) -> dict[str, Any]:
    plan = sizes(quick)
    return {
        "pricesUsdPer100k": PRICES_USD_PER_100K,
        "moves": [moves(stack, n, seed, workers) for n in plan["moves"]],
        "chat": [chat_run(stack, n, p, k, seed, workers) for n, p, k in plan["chat"]],
        "watchdog": watchdog(stack, plan["finished"], seed, workers),
    }


def _row(label: str, per: dict[str, Any]) -> str:
    return f"| {label} | " + " | ".join(str(per.get(k)) for k in FIELDS) + " |"


def summary(results: dict[str, Any]) -> str:
    lines = [
        "| per ... | reads | writes | deletes | transactions | RPCs |",
        "|---|---|---|---|---|---|",
    ]
    for m in results.get("moves", []):
        lines.append(_row(f"stage move ({m['agents']} agents, all functions)", m["perStageMove"]))
        for name in ("onParticipantUpdated", "onAgentWake"):
            f = m["byFunction"].get(name)
            if f:
                per = {k: f[f"{k}PerDelivery"] for k in FIELDS}
                lines.append(_row(f"{name} delivery ({m['agents']} agents)", per))
    for c in results.get("chat", []):
        label = f"chat message ({c['agents']} agents, {c['policy']}, all functions)"
        lines.append(_row(label, c["perMessage"]))
        f = c["byFunction"].get("onAgentTurn")
        if f:
            per = {k: f[f"{k}PerDelivery"] for k in FIELDS}
            lines.append(_row(f"onAgentTurn delivery ({c['agents']} agents, {c['policy']})", per))
    for w in (results.get("watchdog") or {}).get("runs", []):
        lines.append(
            _row(
                f"watchdog tick, {w['finishedExperiments']} finished experiments", w["perTick"][-1]
            )
        )
    lines.append("")
    lines.append("| experiment | Firestore USD | model calls | model tokens |")
    lines.append("|---|---|---|---|")
    for m in results.get("moves", []):
        lines.append(
            f"| {m['agents']} agents x {m['stages']} stages | {m['experimentUsd']} | "
            f"{m['modelCalls']} | {m['modelTokens']} |"
        )
    for c in results.get("chat", []):
        lines.append(
            f"| 1000 chat messages, {c['agents']} agents, {c['policy']} | "
            f"{c['usdPer1000Messages']} | {c['modelCalls']} per {c['messages']} messages | "
            f"{c['modelTokens']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    t0 = time.monotonic()
    with Stack() as stack, env(DLAB_CONFIG_CACHE_SECONDS=str(args.config_cache)):
        results = {
            "machine": machine(),
            "configCacheSeconds": args.config_cache,
            **run(stack, args.seed, args.workers, args.quick),
        }
    results["elapsedSeconds"] = round(time.monotonic() - t0, 1)
    args.out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(summary(results))
    print(f"\nWrote {args.out} ({results['elapsedSeconds']} s).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
