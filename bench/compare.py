"""``python -m bench --compare REF``: the benchmark's sections on REF and on the working tree,
alternating, and each figure's ratio with its spread.

REF (any commit git knows) is checked out into a temporary git worktree; each pair runs the same
``python -m bench`` command (the arguments given, without ``--compare``, ``--pairs`` and
``--out``) once on REF and once on the working tree, with this interpreter, the first of the two
taking turns (REF first in odd pairs), so that a machine whose speed drifts during the call moves
both sides alike. Each run writes its JSON; the figures of ``HEADLINE`` found in both are
compared pair by pair (working tree / REF): the median ratio and its spread (the lowest and
highest pair), beside each side's median. Only runs of one call compare: the machine's load at
each run is printed too.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
STRIPPED = {"--compare": 1, "--pairs": 1, "--out": 1}
"""The gate's own options (and how many values follow each), not passed to the runs."""
HEADLINE = {
    "wallSeconds",
    "transitionsPerSecond",
    "functionInvocations",
    "modelCalls",
    "modelCallsPerMessage",
    "repliesPerMessage",
    "electionRecordsPerMessage",
    "duplicates",
    "conversationSeconds",
    "eventsPerSecond",
    "overheadRatioP50",
    "messageToReplyMs.p50",
    "messageToReplyMs.p95",
    "replyLatencyMs.p50",
    "replyLatencyMs.p95",
    "overheadPerEventMs.p50",
    "pythonCpuMsPerTransition",
}
"""The figures compared: a leaf's key, or a distribution's ``name.p50``; anything else a
section writes (per-function detail, profiles, stage times) stays in the runs' JSON."""
SKIPPED = {"profile", "stageTimes", "deliveries", "machine", "loadAverage", "cpu"}
"""Subtrees not searched for figures (per-function and per-stage detail)."""
RUN_KEYS = ("label", "policy", "agents", "processes", "profiled", "workers")
"""Keys naming one run of a section's list of runs (``transitions.runs[100 agents, ...]``)."""


@dataclass
class Side:
    name: str
    tree: Path
    figures: list[dict[str, float]] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)


def run_args(argv: Sequence[str]) -> list[str]:
    """``argv`` without the gate's own options."""
    out: list[str] = []
    skip = 0
    for arg in argv:
        if skip:
            skip -= 1
            continue
        name = arg.split("=", 1)[0]
        if name in STRIPPED:
            skip = 0 if "=" in arg else STRIPPED[name]
            continue
        out.append(arg)
    return out


def _label(item: dict[str, Any], index: int) -> str:
    parts = [f"{k}={item[k]}" for k in RUN_KEYS if k in item and item[k] not in (None, False)]
    return ", ".join(parts) or str(index)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def figures(results: dict[str, Any]) -> dict[str, float]:
    """The ``HEADLINE`` figures of one run's JSON, by path."""
    out: dict[str, float] = {}

    def walk(node: Any, path: str, parent: str, key: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k not in SKIPPED:
                    walk(v, f"{path}.{k}", key, k)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                label = _label(v, i) if isinstance(v, dict) else str(i)
                walk(v, f"{path}[{label}]", parent, key)
        elif _number(node) and (key in HEADLINE or f"{parent}.{key}" in HEADLINE):
            out[path] = float(node)

    for section, body in (results.get("sections") or {}).items():
        walk(body, section, "", section)
    return out


@dataclass(frozen=True)
class Row:
    figure: str
    ref: float
    new: float
    ratio: float
    low: float
    high: float


def compare(ref: Side, new: Side) -> list[Row]:
    """Per figure present in every run of both sides: medians and the pairs' ratios."""
    names = set.intersection(*(set(f) for f in ref.figures + new.figures))
    rows = []
    for name in sorted(names):
        olds = [f[name] for f in ref.figures]
        news = [f[name] for f in new.figures]
        ratios = [n / o for o, n in zip(olds, news, strict=True) if o]
        if not ratios:
            continue
        rows.append(
            Row(
                name,
                statistics.median(olds),
                statistics.median(news),
                statistics.median(ratios),
                min(ratios),
                max(ratios),
            )
        )
    return rows


def table(rows: list[Row], ref: Side, new: Side) -> str:
    head = ["figure", f"{ref.name} (median)", "working tree", "ratio", "spread"]
    lines = [head, ["---"] * len(head)]
    for r in rows:
        lines.append(
            [
                r.figure,
                f"{r.ref:g}",
                f"{r.new:g}",
                f"{r.ratio:.2f}",
                f"{r.low:.2f}-{r.high:.2f}",
            ]
        )
    loads = ref.loads + new.loads
    pairs = len(new.figures)
    note = (
        f"{pairs} pairs, alternating; ratio = working tree / {ref.name}, median of the pairs, "
        f"spread = lowest-highest pair; load average at the runs' starts "
        f"{min(loads):.1f}-{max(loads):.1f}"
    )
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines) + "\n\n" + note


@dataclass(frozen=True)
class Worktree:
    ref: str
    commit: str
    path: Path


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def checkout(ref: str, where: Path) -> Worktree:
    commit = _git("rev-parse", "--verify", f"{ref}^{{commit}}")
    _git("worktree", "add", "--detach", str(where), commit)
    return Worktree(ref, commit, where)


def _order(pairs: int) -> Iterator[tuple[int, bool]]:
    """(pair, REF first?) for each pair: REF first in the odd ones."""
    for pair in range(pairs):
        yield pair, pair % 2 == 0


def _run(side: Side, args: list[str], out: Path, log: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    side.loads.append(os.getloadavg()[0])
    t0 = time.monotonic()
    with log.open("w") as sink:
        done = subprocess.run(
            [sys.executable, "-m", "bench", *args, "--out", str(out)],
            cwd=side.tree,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    if done.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-20:])
        raise SystemExit(f"{side.name}: python -m bench exited {done.returncode} ({log}):\n{tail}")
    print(f"  {side.name}: {time.monotonic() - t0:.0f} s", flush=True)
    results: dict[str, Any] = json.loads(out.read_text())
    return results


def main(ref: str, argv: Sequence[str], pairs: int, out: Path | None) -> int:
    if pairs < 1:
        raise SystemExit("--pairs: at least 1 (3 or more for a spread worth reading)")
    args = run_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="bench-compare-"))
    tree = checkout(ref, scratch / "ref")
    short = tree.commit[:9]
    old = Side(f"{ref} ({short})" if not tree.commit.startswith(ref) else short, tree.path)
    new = Side("working tree", REPO_ROOT)
    print(f"comparing {old.name} with the working tree: python -m bench {' '.join(args)}")
    print(f"  {pairs} pairs; runs' logs and JSON in {scratch}", flush=True)
    try:
        for pair, ref_first in _order(pairs):
            print(f"pair {pair + 1}/{pairs}", flush=True)
            for side in (old, new) if ref_first else (new, old):
                tag = "ref" if side is old else "new"
                results = _run(
                    side, args, scratch / f"{tag}-{pair}.json", scratch / f"{tag}-{pair}.log"
                )
                side.figures.append(figures(results))
    finally:
        _git("worktree", "remove", "--force", str(tree.path))
    rows = compare(old, new)
    text = table(rows, old, new)
    print()
    print(text)
    if out is not None:
        out.write_text(text + "\n")
        print(f"\nWrote {out}.")
    shutil.rmtree(scratch / "ref", ignore_errors=True)
    return 0
