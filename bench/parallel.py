"""Parallel agents (issue 30): Diskurs' examples/parallel_agent with k branches, each model call
taking a fixed time, so the branch phase's wall time shows whether the branches run in
parallel (about one call) or in turn (k calls), and what the fan-out and join cost around them.

    python -m bench.parallel [--branches 1 4 16] [--call-s 0.5] [--workers 8]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.parallel", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--branches", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--call-s", type=float, default=0.5)
    parser.add_argument("--workers", type=int, default=8)
    return parser


if __name__ == "__main__":
    _parser().parse_args()  # --help and bad arguments answer before the stack is imported

from google.cloud import firestore  # noqa: E402

from bench.stack import Stack, machine, say  # noqa: E402
from shared.conductor.documents import ACTIVE  # noqa: E402
from shared.llm.base import ModelClient, ModelReply, ModelRequest, Usage  # noqa: E402
from tools.load_workflow import load  # noqa: E402

PROJECT = Path(__file__).resolve().parents[1] / "examples" / "diskurs" / "parallel_agent"


class SlowModel:
    """Answers the example after ``seconds``: the urls in the main turn, a list and an action
    in each branch (the branch's url is in its prompt)."""

    def __init__(self, urls: list[str], seconds: float) -> None:
        self.urls, self.seconds = urls, seconds

    def wrap(self, _: ModelClient) -> ModelClient:
        outer = self

        class Slow:
            def generate(self, request: ModelRequest) -> ModelReply:
                time.sleep(outer.seconds)
                if "Extract all urls" in request.prompt:
                    reply: dict[str, Any] = {"urls": outer.urls}
                else:
                    reply = {"list_name": "whitelist", "action": "add"}
                text = json.dumps(reply)
                return ModelReply(text=text, usage=Usage(1, 1), raw=text)

        return Slow()


def one(db: firestore.Client, rt: Any, k: int, seconds: float, workflow: str) -> dict[str, Any]:
    cid = f"bench-{k}"
    model = SlowModel([f"site{i}.example" for i in range(k)], seconds)
    with rt.model_wrapper(model.wrap):
        t0 = time.time()
        db.document(f"conversations/{cid}").set(
            {"query": "configure these sites", "workflowId": workflow, "status": "PENDING"}
        )
        while (db.document(f"conversations/{cid}").get().to_dict() or {}).get("status") in [
            s.value for s in ACTIVE
        ]:
            rt.wait_until_idle(timeout=300)
            rt.tick()
        wall = time.time() - t0
    join = db.document(f"conversations/{cid}/steps/0001").get().to_dict() or {}
    branch_phase = (join["completedAt"] - join["createdAt"]).total_seconds()
    return {
        "branches": k,
        "callSeconds": seconds,
        "wallSeconds": round(wall, 2),
        "branchPhaseSeconds": round(branch_phase, 2),
        "inTurnSeconds": round(k * seconds, 2),
        "status": (db.document(f"conversations/{cid}").get().to_dict() or {}).get("status"),
    }


def main() -> None:
    args = _parser().parse_args()
    results = []
    with Stack() as stack, stack.runtime("parallel", workers=args.workers, processes=0) as rt:
        db = firestore.Client(project=rt.project)
        os.environ["DLAB_WORKFLOW_DIRS"] = str(PROJECT.parent)
        load(db, PROJECT, "parallel", config_file=PROJECT / "parallel_config.yaml")
        for k in args.branches:
            say(f"parallel agent: {k} branches, {args.call_s} s a model call")
            results.append(one(db, rt, k, args.call_s, "parallel"))
    print(json.dumps({"machine": machine(), "workers": args.workers, "runs": results}, indent=2))


if __name__ == "__main__":
    main()
