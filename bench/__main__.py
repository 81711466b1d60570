"""``python -m bench``: run the benchmark, print progress and a summary, write the JSON.

python -m bench                   # full run (about 10 minutes on 2 cores)
python -m bench --quick           # small sizes, for development (about 1 minute)
python -m bench --only election   # one section (repeatable)
python -m bench --only stress     # the chat stress script (not in the full run; 20+ minutes)
python -m bench --only cost       # the cost report (also python -m bench.cost)
python -m bench --only debate     # hierarchical vs all-to-all debate (not in the full run)
python -m bench --only debate_shapes  # the same over category shapes, with decisions (not either)
python -m bench --rtt-ms 10       # every Firestore / Pub/Sub round trip of the functions 10 ms
python -m bench.report            # the summary of the last saved run again
python -m bench --compare REF --only transitions [--pairs 3]
                                  # REF against the working tree, alternating (docs/BENCHMARK.md)
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from bench.rtt_proxy import add_rtt_argument
from emulator.config import add_processes_argument

SECTIONS = ("overhead", "latency", "transitions", "election", "conductor")
EXTRA_SECTIONS = ("stress", "cost", "debate", "debate_shapes")
"""Run only when named with --only: the stress runs take longer than the rest together; the cost
report has its own command too (``python -m bench.cost``)."""
DEFAULT_OUT = Path(__file__).resolve().parent / "results.json"


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (development)")
    parser.add_argument(
        "--only",
        action="append",
        choices=SECTIONS + EXTRA_SECTIONS,
        help="run only this section (repeatable)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    parser.add_argument("--seed", type=int, default=0, help="agent ids, message ids, fake replies")
    parser.add_argument(
        "--workers", type=int, default=8, help="runtime workers (the runtime's default: 8)"
    )
    add_processes_argument(parser)  # the transitions section; the others measure in-process
    add_rtt_argument(parser)
    parser.add_argument("-v", "--verbose", action="store_true", help="log the runtime's warnings")
    parser.add_argument(
        "--compare",
        metavar="REF",
        help="run the sections on REF (a git commit, checked out into a temporary worktree) and "
        "on the working tree, alternating, and print each figure's ratio and spread",
    )
    parser.add_argument(
        "--pairs", type=int, default=3, help="with --compare: REF/working-tree pairs (default 3)"
    )
    return parser.parse_args(argv)


def _sizes(quick: bool) -> dict[str, Any]:
    """How much each section does; the full sizes take about 10 minutes on 2 cores.

    Transitions: ``transitions.Run`` (agents, workers, profiled, processes). Election fake-provider
    runs: (agents, policy, workers, messages); race there uses one worker per agent, as
    production runs one instance per turn."""
    if quick:
        return {
            "overhead": {"samples": 40, "burst": 100},
            "latency": {"samples": 10},
            "transitions": {
                "runs": [(10, None, False, None), (20, None, False, None), (10, None, True, 0)]
            },
            "election": {
                "agents": (3, 10),
                "messages": {"race": 6, "claim": 15},
                "fake": [(10, "race", 10, 4)],
            },
            "stress": {"runs": 2, "chaos_runs": 1},
            "debate": {"agents": (8,), "parallel_agents": 8},
            "debate_shapes": {"agents": (8,), "shapes": ("3", "29/2/1")},
            "conductor": {
                "agents": 10,
                "messages": {"race": 6, "claim": 10, "conductor": 10},
                "conversations": 5,
            },
        }
    return {
        "overhead": {"samples": 200, "burst": 500},
        "latency": {"samples": 40},
        "transitions": {
            "runs": [
                (10, None, False, None),
                (100, None, False, None),
                (100, None, False, 0),  # threads of one process, for comparison
                (100, 4, False, None),
                (100, 16, False, None),
                (10, None, True, 0),
            ]
        },
        "election": {
            "agents": (3, 10, 30, 100),
            "messages": {"race": 15, "claim": 300},
            "fake": [(30, "race", 32, 10), (30, "claim", 32, 30), (100, "race", 100, 5)],
        },
        "stress": {"runs": 10, "chaos_runs": 10},
        "debate": {"agents": (8, 32, 128), "parallel_agents": 32},
        "debate_shapes": {"agents": (8, 32, 128)},
        "conductor": {
            "agents": 10,
            "messages": {"race": 15, "claim": 60, "conductor": 60},
            "conversations": 40,
        },
    }


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if args.compare:
        from bench import compare

        given = sys.argv[1:] if argv is None else argv
        out = args.out if args.out != DEFAULT_OUT else None
        return compare.main(args.compare, given, args.pairs, out)
    # The sections, and the stack under them, only now: --help and --compare need none of them.
    from bench import (
        conductor,
        cost,
        debate,
        debate_shapes,
        election,
        latency,
        overhead,
        report,
        stress_chat,
        transitions,
    )
    from bench.stack import Stack, machine, say

    logging.basicConfig(
        level=logging.WARNING if args.verbose else logging.ERROR,
        format="%(levelname)s %(name)s: %(message)s",
    )
    sections = args.only or list(SECTIONS)
    sizes = _sizes(args.quick)
    results: dict[str, Any] = {
        "command": "python -m bench " + " ".join(sys.argv[1:] if argv is None else argv),
        "quick": args.quick,
        "seed": args.seed,
        "workers": args.workers,
        "processes": args.processes,
        "rttMs": args.rtt_ms,
        "machine": machine(),
        "sections": {},
    }
    t0 = time.monotonic()
    say("starting the Firestore and Pub/Sub emulators ...")
    with Stack(rtt_ms=args.rtt_ms) as stack:
        results["emulatorStartupSeconds"] = round(stack.startup_seconds, 1)
        say(f"emulators up in {stack.startup_seconds:.1f} s")
        if "overhead" in sections:
            results["sections"]["overhead"] = overhead.run(
                stack, workers=args.workers, **sizes["overhead"]
            )
        if "latency" in sections:
            results["sections"]["latency"] = latency.run(
                stack, seed=args.seed, workers=args.workers, **sizes["latency"]
            )
        if "transitions" in sections:
            results["sections"]["transitions"] = transitions.run(
                stack,
                seed=args.seed,
                workers=args.workers,
                processes=args.processes,
                **sizes["transitions"],
            )
        if "election" in sections:
            results["sections"]["election"] = election.run(
                stack, seed=args.seed, workers=args.workers, **sizes["election"]
            )
        if "cost" in sections:
            results["sections"]["cost"] = cost.run(
                stack, seed=args.seed, workers=args.workers, quick=args.quick
            )
        if "debate" in sections:
            results["sections"]["debate"] = debate.run(
                stack, seed=args.seed, workers=args.workers, **sizes["debate"]
            )
            print(debate.summary(results["sections"]["debate"]))
        if "debate_shapes" in sections:
            results["sections"]["debate_shapes"] = debate_shapes.run(
                stack, seed=args.seed, workers=args.workers, **sizes["debate_shapes"]
            )
            print(debate_shapes.summary(results["sections"]["debate_shapes"]))
        if "conductor" in sections:
            results["sections"]["conductor"] = conductor.run(
                stack, seed=args.seed, workers=args.workers, **sizes["conductor"]
            )
        if "stress" in sections:
            results["sections"]["stress"] = stress_chat.run(
                stack, seed=args.seed, workers=args.workers, **sizes["stress"]
            )
    results["elapsedSeconds"] = round(time.monotonic() - t0, 1)
    results["targets"] = report.targets(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print()
    print(report.summary(results))
    print(f"\nWrote {args.out} ({results['elapsedSeconds']} s in all).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
