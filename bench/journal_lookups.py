"""How often a first execution looks in the journal (issue 37: target 0): stage moves of 10
agents through the 10 non-chat stages (``bench.transitions``, scripted model), in-process, with
``functions.journal.recorded`` counted: calls, those that read Firestore (``lookups_on``: a
unit's re-execution or a replay) and those that found a reply.

python -m bench.journal_lookups [--seeds 2]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import threading
from typing import Any

from bench import transitions
from bench.stack import Stack
from functions import journal

MOVE_AGENTS = 10


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.journal_lookups")
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--workers", type=int, default=16)
    args = p.parse_args(argv)
    counts: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()
    original = journal.recorded

    def recorded(run: str, key: str) -> Any:
        looked = journal.lookups_on()
        got = original(run, key)
        with lock:
            counts["calls"] += 1
            counts["lookups" if looked else "no lookup"] += 1
            counts["found"] += got is not None
        return got

    journal.recorded = recorded  # type: ignore[assignment]  # model_call reads it per call
    try:
        with Stack() as stack:
            for seed in range(args.seeds):
                out = transitions._one(
                    stack, MOVE_AGENTS, args.workers, 0, seed, profiled=False, timeout=240
                )
                got = {"seed": seed, "modelCalls": out["modelCalls"], "finished": out["finished"]}
                print(json.dumps(got | dict(counts)), flush=True)
                counts.clear()
    finally:
        journal.recorded = original  # type: ignore[assignment]
    return 0


if __name__ == "__main__":
    sys.exit(main())
