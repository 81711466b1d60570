"""Add up the functions' Firestore usage lines per experiment and function, and price them.

Every invocation writes one JSON line with its billed operations (``functions/usage.py``): to
stdout in production, where Cloud Logging keeps it as ``jsonPayload.firestoreUsage``, and
locally to the file ``DLAB_USAGE_LOG`` names. This reads either form:

    python -m tools.usage_report usage.log                        # JSON lines (local)
    gcloud logging read 'jsonPayload.firestoreUsage.function:*' --format=json > usage.json
    python -m tools.usage_report usage.json --experiment EXP_ID  # a Cloud Logging export

and prints reads, writes, deletes, transactions and RPCs per function (total and per
invocation) and what they cost at Firestore's list prices (``--prices``).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

FIELDS = ("reads", "writes", "deletes", "transactions", "rpcs")
PRICES_USD_PER_100K: dict[str, dict[str, float]] = {
    "nam5": {"reads": 0.06, "writes": 0.18, "deletes": 0.02},
    "us-central1": {"reads": 0.03, "writes": 0.09, "deletes": 0.01},
}
"""Firestore Standard edition list prices per 100,000 documents (a multi-region and a region);
the free daily quota (50,000 reads, 20,000 writes and deletes) is not subtracted."""


def _from_line(line: str) -> dict[str, Any] | None:
    start = line.find("{")
    if start < 0 or "firestoreUsage" not in line:
        return None
    try:
        data = json.loads(line[start:])
    except ValueError:
        return None
    return _usage_of(data)


def _usage_of(data: Any) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        return None
    payload = data.get("jsonPayload", data)
    usage = payload.get("firestoreUsage") if isinstance(payload, dict) else None
    return usage if isinstance(usage, dict) and "function" in usage else None


def read_entries(paths: Iterable[Path]) -> Iterator[dict[str, Any]]:
    """The usage entries in JSON-lines files or Cloud Logging JSON exports."""
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if text.lstrip().startswith("["):
            for item in json.loads(text):
                entry = _usage_of(item)
                if entry is not None:
                    yield entry
            continue
        for line in text.splitlines():
            entry = _from_line(line)
            if entry is not None:
                yield entry


def experiment_of(subject: str) -> str:
    parts = subject.split("/")
    return parts[1] if len(parts) > 1 and parts[0] == "experiments" else "(none)"


def dollars(totals: dict[str, int], prices: dict[str, float]) -> float:
    return sum(totals.get(k, 0) * p / 100_000 for k, p in prices.items())


def summarize(
    entries: Iterable[dict[str, Any]], experiment: str | None = None, prices: str = "nam5"
) -> dict[str, Any]:
    """Totals per function and per experiment, and their cost."""
    functions: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    experiments: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for entry in entries:
        exp = experiment_of(str(entry.get("subject", "")))
        if experiment is not None and exp != experiment:
            continue
        counts = {k: int(entry.get(k) or 0) for k in FIELDS}
        functions[str(entry["function"])].update({**counts, "invocations": 1})
        experiments[exp].update({**counts, "invocations": 1})
    rates = PRICES_USD_PER_100K[prices]

    def row(c: collections.Counter[str]) -> dict[str, Any]:
        n = c["invocations"]
        totals = {k: c[k] for k in FIELDS}
        return {
            "invocations": n,
            **totals,
            "perInvocation": {k: round(v / n, 2) for k, v in totals.items()} if n else {},
            "usd": round(dollars(totals, rates), 6),
        }

    total: collections.Counter[str] = collections.Counter()
    for c in functions.values():
        total.update(c)
    return {
        "prices": prices,
        "functions": {f: row(c) for f, c in sorted(functions.items())},
        "experiments": {e: row(c) for e, c in sorted(experiments.items())},
        "total": row(total),
    }


def table(report: dict[str, Any]) -> str:
    lines = [
        "| function | invocations | reads | writes | deletes | transactions | RPCs "
        "| per invocation (r/w/d/t/rpc) | USD |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = [*report["functions"].items(), ("all", report["total"])]
    for name, r in rows:
        per = r["perInvocation"]
        per_text = "/".join(str(per.get(k, 0)) for k in FIELDS)
        counts = " | ".join(str(r[k]) for k in FIELDS)
        lines.append(f"| {name} | {r['invocations']} | {counts} | {per_text} | {r['usd']:.6f} |")
    lines.append("")
    lines.append(f"Per experiment (USD at {report['prices']} list prices):")
    for name, r in report["experiments"].items():
        lines.append(
            f"  {name}: {r['invocations']} invocations, {r['reads']} reads, {r['writes']} "
            f"writes, {r['deletes']} deletes, ${r['usd']:.6f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.usage_report", description=__doc__.split("\n")[0]
    )
    parser.add_argument("files", nargs="+", type=Path, help="usage logs (JSON lines or export)")
    parser.add_argument("--experiment", help="only this experiment id")
    parser.add_argument("--prices", choices=sorted(PRICES_USD_PER_100K), default="nam5")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    report = summarize(read_entries(args.files), args.experiment, args.prices)
    print(json.dumps(report, indent=2) if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
