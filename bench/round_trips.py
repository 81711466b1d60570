"""Round trips as production sees them (issue 29 item 8): the reply path, stage transitions and
the society at two round-trip times, alternating on one pair of warm emulators.

python -m bench.round_trips                        # 0 and 10 ms, twice each (about 12 minutes)
python -m bench.round_trips --rtt-ms 0 --rtt-ms 20 --repeats 3 --out /tmp/rt.json

Every Firestore and Pub/Sub call the functions make goes through ``bench.rtt_proxy``; between
measurements only the proxy's delay changes (0 first, then the others, then in reverse order:
ABBA, so a machine whose load drifts weighs on both sides alike). Per round-trip time:

- a race reply and a claim reply: ``bench.reply_path`` (the chat stress's 6 agents + mediator,
  three threads, 300 ms fake model, one run per measurement): message -> reply above the model,
  p50 / p90, and how long the chat took;
- a stage move: ``bench.transitions`` with 10 agents (scripted model): the median agent's time
  on a stage, over the stages that neither start the experiment nor wait for the cohort;
- a society day: ``bench.society`` (scripted model): each day from open to closed, day 1 left out.

Sequential round trips on a path = (its median at N ms - at 0 ms) / N ms: what N ms per call
added to it, in calls. It counts the calls one after another on the path (side-by-side calls
count once) and is blurred by whatever else the delay changes (a worker busy longer). Beside it,
the Firestore RPCs each invocation made (``functions.usage``'s per-invocation line, written to a
file through ``DLAB_USAGE_LOG``): all of them, side by side or not, Pub/Sub publishes not counted,
with their sums and the billed reads, writes, deletes and transactions per function; and the call
logs and journal entries the measurement left (``bench.journal_size``; the stage-move run
deletes its documents before they are counted, so there its model calls come from its own count).
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parent / "round_trips_results.json"
PATHS = ("claim", "race", "transitions", "society")
MOVE_AGENTS = 10
"""Agents of the stage-move measurement: few enough that workers never queue them."""


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.round_trips", description=__doc__.split("\n")[0]
    )
    p.add_argument(
        "--rtt-ms", type=float, action="append", help="round-trip times (default: 0 and 10)"
    )
    p.add_argument("--repeats", type=int, default=2, help="measurements per path and delay")
    p.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=8, help="runtime workers")
    p.add_argument(
        "--processes",
        type=int,
        help="worker processes of the transitions and society runs (the chat runs in-process;"
        " default: the runtime's, one per core)",
    )
    p.add_argument("--society-agents", type=int, default=30)
    p.add_argument("--society-days", type=int, default=4)
    p.add_argument(
        "--no-warmup",
        dest="warmup",
        action="store_false",
        help="skip the unrecorded first run (a cold emulator's first run is the slowest)",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    args = p.parse_args(argv)
    if args.processes is None:
        from emulator.config import default_processes  # after --help: it loads the stack

        args.processes = default_processes()
    return args


if __name__ == "__main__":
    _args(None)  # --help and bad arguments answer before the stack is imported

from bench import journal_size, reply_path, society, transitions  # noqa: E402
from bench.stack import env, machine, say  # noqa: E402

COUNTED = ("rpcs", "reads", "writes", "deletes", "transactions")


def _rpcs(log: Path) -> dict[str, dict[str, float]]:
    """Per function: invocations, the median / mean Firestore RPCs of one invocation, and the
    sums of its RPCs and billed operations (reads, writes, deletes, transactions)."""
    by: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    if log.exists():
        for line in log.read_text().splitlines():
            usage = json.loads(line).get("firestoreUsage") or {}
            if "function" in usage:
                by[usage["function"]].append(usage)
    out: dict[str, dict[str, float]] = {}
    for name, lines in sorted(by.items()):
        rpcs = [int(u.get("rpcs", 0)) for u in lines]
        out[name] = {
            "invocations": len(lines),
            "medianRpcs": statistics.median(rpcs),
            "meanRpcs": round(statistics.fmean(rpcs), 2),
        } | {f"sum{k.title()}": sum(int(u.get(k, 0)) for u in lines) for k in COUNTED}
    return out


def _stored(stack: reply_path.ProbedStack, projects: list[str]) -> dict[str, Any]:
    """The call logs and journal entries the measurement's runtimes left
    (``bench.journal_size``), added up over its projects."""
    out: dict[str, Any] = {"logs": 0, "journal": 0, "journalBytes": []}
    with env(FIRESTORE_EMULATOR_HOST=stack.services.firestore.host):  # not through the proxy
        for project in projects:
            got = journal_size.stored(project)
            out["logs"] += got["logs"]
            out["journal"] += got["journal"]
            if "journalBytes" in got:
                out["journalBytes"].append(got["journalBytes"])
    return out


def _reply(stack: reply_path.ProbedStack, policy: str, args: argparse.Namespace) -> dict[str, Any]:
    options = argparse.Namespace(runs=1, seed=args.seed, workers=args.workers)
    got = reply_path.measure(stack, reply_path.Clocks(), policy, options)
    figures = got["figures"]
    run = got["runs"][0]
    return {
        "p50": figures["total"]["p50"],
        "p90": figures["total"]["p90"],
        "replies": got["matched"],
        "chatSeconds": run["seconds"],
        "ok": run["ok"],
        "segmentsP50": {s: figures[s]["p50"] for s in reply_path.SEGMENTS},
    }


def _moves(args: argparse.Namespace, stack: reply_path.ProbedStack, seed: int) -> dict[str, Any]:
    out = transitions._one(
        stack,
        MOVE_AGENTS,
        args.workers,
        args.processes,
        seed,
        profiled=False,
        timeout=240,
    )
    ids = transitions.template()["experiment"]["stageIds"]
    moves = [
        v["secondsOnStage"]["p50"] * 1000
        for key, v in out["stageTimes"].items()
        if key.split(" ")[0] not in (ids[0], transitions.SYNC_STAGE)
        and v["secondsOnStage"]["p50"] is not None
    ]
    return {
        "p50": round(statistics.median(moves), 1) if moves else None,
        "mean": round(statistics.fmean(moves), 1) if moves else None,
        "wallSeconds": out["wallSeconds"],
        "finished": out["finished"],
        "modelCalls": out["modelCalls"],
        "ok": out["finished"] == MOVE_AGENTS and out["errorRecords"] == 0,
    }


def _society(args: argparse.Namespace, stack: reply_path.ProbedStack) -> dict[str, Any]:
    options = argparse.Namespace(
        agents=args.society_agents,
        days=args.society_days,
        seed=args.seed,
        workers=args.workers,
        mode="concurrent",
        processes=args.processes,
        timeout=600.0,
    )
    got = society.run(options, stack)
    days = [d * 1000 for d in got["per_day_s"][1:]]
    return {
        "p50": round(statistics.median(days), 1) if days else None,
        "wallSeconds": got["wall_s"],
        "ok": got["invariants_ok"] and len(got["per_day_s"]) == args.society_days,
    }


def _measure(
    path: str, args: argparse.Namespace, stack: reply_path.ProbedStack, seed: int
) -> dict[str, Any]:
    before = set(stack.probes)
    with tempfile.TemporaryDirectory(prefix="dlab-rt-") as folder:
        log = Path(folder) / "usage.jsonl"
        with env(**{"DLAB_USAGE_LOG": str(log)}):  # a usage line per invocation
            if path in ("claim", "race"):
                got = _reply(stack, path, args)
            elif path == "transitions":
                got = _moves(args, stack, seed)
            else:
                got = _society(args, stack)
        got["rpcsPerInvocation"] = _rpcs(log)
    made = [p for p in stack.probes if p not in before]
    got["stored"] = _stored(stack, made) | {"projects": made}
    return got


def _order(rtts: list[float], repeats: int) -> list[float]:
    """ABBA...: the delays forward, then backward, ``repeats`` times in all."""
    out: list[float] = []
    for i in range(repeats):
        out += rtts if i % 2 == 0 else list(reversed(rtts))
    return out


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 1) if present else None


def summary(results: dict[str, Any]) -> dict[str, Any]:
    """Per path and delay: the medians over the repeats; per path and delay above the first:
    the sequential round trips (p50 difference / delay)."""
    rtts = results["rttMs"]
    out: dict[str, Any] = {}
    for path in results["paths"]:
        rows = [m for m in results["measurements"] if m["path"] == path]
        per: dict[str, Any] = {}
        for rtt in rtts:
            mine = [m["result"] for m in rows if m["rttMs"] == rtt]
            per[str(rtt)] = {
                "p50": _median([m.get("p50") for m in mine]),
                "p90": _median([m.get("p90") for m in mine]),
                "runsP50": [m.get("p50") for m in mine],
                "wallSeconds": _median([m.get("chatSeconds", m.get("wallSeconds")) for m in mine]),
                "ok": all(m.get("ok") for m in mine),
            }
        base = per[str(rtts[0])]["p50"]
        for rtt in rtts[1:]:
            p50 = per[str(rtt)]["p50"]
            if base is not None and p50 is not None and rtt != rtts[0]:
                per[str(rtt)]["roundTrips"] = round((p50 - base) / (rtt - rtts[0]), 1)
        out[path] = per
    return out


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    rtts = args.rtt_ms or [0.0, 10.0]
    results: dict[str, Any] = {
        "command": "python -m bench.round_trips "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine(),
        "rttMs": rtts,
        "paths": args.paths,
        "measurements": [],
    }
    t0 = time.monotonic()
    say("starting the emulators and the RTT proxy ...")
    with reply_path.ProbedStack(rtt_ms=rtts[0]) as stack:  # society and moves use it too
        if args.warmup:
            say("round trips: warming the emulators up (a stage-move run, not recorded)")
            _moves(args, stack, seed=args.seed - 1)
        for i, rtt in enumerate(_order(rtts, args.repeats)):
            for path in args.paths:
                stack.set_rtt(rtt)
                say(f"round trips: {path} at {rtt:g} ms (pass {i + 1})")
                got = _measure(path, args, stack, seed=args.seed + i)
                say(f"round trips: {path} at {rtt:g} ms: {json.dumps(got)[:300]}")
                results["measurements"].append(
                    {"path": path, "rttMs": rtt, "pass": i + 1, "result": got}
                )
                results["summary"] = summary(results)
                results["elapsedSeconds"] = round(time.monotonic() - t0, 1)
                args.out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    results["machine"]["loadAverageAtEnd"] = [round(x, 2) for x in os.getloadavg()]
    args.out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(json.dumps(results["summary"], indent=2))
    print(f"Wrote {args.out} ({results['elapsedSeconds']} s in all).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
