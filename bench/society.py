"""The agent society's benchmark: N agents x D days on the scripted model, on the emulators.

    python -m bench.society                        # 100 agents x 10 days
    python -m bench.society --agents 1000 --days 3
    python -m bench.society --members 10000 --days 2 --shard-size 500   # the sharded close
    python -m bench.society --mode chaos           # the same under chaos delivery
    python -m bench.society --processes 0          # functions on threads of one process
    python -m bench.society --rtt-ms 10            # 10 ms per Firestore / Pub/Sub round trip

Reports wall time (creation to the last day closed), per day (open -> closed, and the close
itself), model calls and prompt tokens per agent-day, the deliveries per function with their
summed time (where the time goes), and the invariants and state hash; appends the run to
``bench/society_results.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.rtt_proxy import add_rtt_argument
from emulator.config import add_processes_argument


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.society", description=__doc__)
    parser.add_argument("--agents", "--members", type=int, default=100)
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--mode", choices=["concurrent", "chaos"], default="concurrent")
    add_processes_argument(parser)
    parser.add_argument("--timeout", type=float, default=1200.0)
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument(
        "--shard-size",
        type=int,
        default=None,
        help="members per invocation of a day's close (DLAB_SOCIETY_CLOSE_SHARD_SIZE)",
    )
    add_rtt_argument(parser)
    return parser


if __name__ == "__main__":
    _parser().parse_args()  # --help and bad arguments answer before the stack is imported

from google.cloud import firestore  # noqa: E402

from bench.stack import Stack  # noqa: E402
from emulator.chaos import ChaosSettings  # noqa: E402
from emulator.runtime import LocalRuntime  # noqa: E402
from tools.society import client  # noqa: E402

OUT = Path(__file__).resolve().parent / "society_results.json"


def _wait(db: firestore.Client, sid: str, days: int, timeout: float) -> None:
    start = time.monotonic()
    deadline, seen = start + timeout, 0
    while (closed := client.closed_days(db, sid)) < days:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {closed} of {days} days closed")
        if closed > seen:
            seen = closed
            print(f"[{time.monotonic() - start:7.1f}s] day {closed} closed", flush=True)
        time.sleep(2.0 if days * 1000 > 2000 else 0.5)


def _where_time_goes(runtime: LocalRuntime, since: float) -> dict[str, dict[str, float]]:
    by: dict[str, list[float]] = defaultdict(list)
    for record in runtime.deliveries:
        if record.started >= since:
            by[record.function].append(record.duration_ms)
    return {
        name: {
            "deliveries": len(ms),
            "total_s": round(sum(ms) / 1000, 2),
            "p50_ms": round(statistics.median(ms), 1),
            "max_ms": round(max(ms), 1),
        }
        for name, ms in sorted(by.items())
    }


def run(args: argparse.Namespace, stack: Stack | None = None) -> dict[str, Any]:
    """One society; on ``stack``'s emulators (and its RTT proxy) if given."""
    os.environ.setdefault("DLAB_MODEL_OVERRIDE", "SCRIPTED")
    if args.shard_size:
        os.environ["DLAB_SOCIETY_CLOSE_SHARD_SIZE"] = str(args.shard_size)
    # a large day's turns queue behind each other for minutes: its deadline and the watchdog's
    # re-drive of turns that have not started must not fire while they are merely queued
    settings = {
        "agents": args.agents,
        "days": args.days,
        "seed": args.seed,
        "dayDeadlineS": max(600.0, args.agents * 0.5),
        "redriveS": max(30.0, args.agents * 0.1),
    }
    chaos = ChaosSettings.from_env() if args.mode == "chaos" else None
    options: dict[str, Any] = {
        "mode": args.mode,
        "workers": args.workers,
        "processes": args.processes,
        "tick_s": 5.0,
        "chaos": chaos,
    }
    runtime = stack.runtime("society", **options) if stack else LocalRuntime(**options)
    with runtime as rt:
        db = firestore.Client(project=rt.project)
        since = time.time()
        started = time.perf_counter()
        sid = client.create(db, settings, name="bench")
        _wait(db, sid, args.days, args.timeout)
        wall = time.perf_counter() - started
        rt.wait_until_idle(timeout=120)
        days = [d for d in client.days(db, sid) if d.status == "closed"]
        summaries = client.summaries(db, sid)
        agent_days = sum(
            len(d.acting) * (d.settings.actions_per_day if d.settings else 1) for d in days
        )
        calls = sum(s.model_calls for s in summaries)
        tokens = sum(s.prompt_tokens for s in summaries)
        audit = client.audit(db, sid)
        result = {
            "agents": args.agents,
            "days": args.days,
            "mode": args.mode,
            "workers": args.workers,
            "processes": args.processes,
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "rtt_ms": stack.rtt_ms if stack else None,
            "wall_s": round(wall, 1),
            "per_day_s": [
                round((d.closed_at - d.opened_at).total_seconds(), 2)
                for d in days
                if d.closed_at and d.opened_at
            ],
            "close_s": [
                round((d.closed_at - d.closing_at).total_seconds(), 2)
                for d in days
                if d.closed_at and d.closing_at
            ],
            "shards_per_day": [d.shards for d in days],
            "shard_size": days[0].shard_size if days else None,
            "agent_days": agent_days,
            "model_calls_per_agent_day": round(calls / max(agent_days, 1), 3),
            "prompt_tokens_per_agent_day": round(tokens / max(agent_days, 1), 1),
            "actions_per_s": round(agent_days / wall, 1),
            "dormant_at_end": summaries[-1].dormant if summaries else None,
            "laws_at_end": len(client.snapshot(db, sid, args.days + 1)[1].laws),
            "invariants_ok": audit.ok,
            "problems": audit.problems[:10],
            "state_hash": client.state_hash(db, sid),
            "functions": _where_time_goes(rt, since),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        if chaos is not None:
            result["chaos"] = chaos.describe()
    return result


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING)
    args = _parser().parse_args(argv)
    if args.rtt_ms is None:
        result = run(args)
    else:
        with Stack(rtt_ms=args.rtt_ms) as stack:
            result = run(args, stack)
    print(json.dumps(result, indent=2))
    if not args.no_save:
        runs = json.loads(OUT.read_text()) if OUT.exists() else []
        OUT.write_text(json.dumps([*runs, result], indent=2) + "\n")
    return 0 if result["invariants_ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
