"""The readable summary of a results dict, and the targets the figures are held to.

``python -m bench.report bench/results.json`` prints the summary of a saved run again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

CLAIM_CALLS_TARGET = 1.3
OVERHEAD_RATIO_TARGET = 3.0
TRANSITIONS_SECONDS_TARGET = 60.0


def _get(d: Any, *keys: Any) -> Any:
    for key in keys:
        if d is None:
            return None
        d = d.get(key) if isinstance(d, dict) else None
    return d


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target with the measured value and met / missed (None when not measured)."""
    sections = results.get("sections", {})
    out = []
    claims = [
        r
        for r in _get(sections, "election", "runs") or []
        if r["policy"] == "claim" and r["model"] == "scripted"
    ]
    biggest = max(claims, key=lambda r: r["agents"], default=None)
    value = biggest["modelCallsPerMessage"] if biggest else None
    out.append(
        {
            "target": f"claim policy: at most {CLAIM_CALLS_TARGET} model calls per delivered "
            f"message at 100 agents",
            "measured": value,
            "at": f"{biggest['agents']} agents" if biggest else None,
            "met": None
            if value is None or biggest["agents"] < 100
            else value <= CLAIM_CALLS_TARGET,
        }
    )
    ratio = _get(sections, "overhead", "overheadRatioP50")
    out.append(
        {
            "target": f"runtime overhead per event at most {OVERHEAD_RATIO_TARGET:g} x a raw "
            "emulator write (p50)",
            "measured": ratio,
            "at": None,
            "met": None if ratio is None else ratio <= OVERHEAD_RATIO_TARGET,
        }
    )
    hundred = [
        r
        for r in _get(sections, "transitions", "runs") or []
        if r["agents"] == 100 and not r.get("profiled")
    ]
    best = min(hundred, key=lambda r: r["wallSeconds"] or float("inf"), default=None)
    default = next((r for r in hundred if r["workers"] == results.get("workers")), best)
    wall = default["wallSeconds"] if default else None
    out.append(
        {
            "target": f"100 agents through a 10-stage non-chat experiment in under "
            f"{TRANSITIONS_SECONDS_TARGET:g} s (scripted model, 2 cores)",
            "measured": wall,
            "at": f"{default['workers']} workers (best: {best['wallSeconds']} s with "
            f"{best['workers']})"
            if default and best
            else None,
            "met": None
            if wall is None or default["finished"] < 100
            else wall < TRANSITIONS_SECONDS_TARGET,
        }
    )
    return out


def _table(header: list[str], rows: list[list[Any]]) -> str:
    cells = [[str("" if c is None else c) for c in row] for row in [header, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join("  " + line for line in lines)


def _ms(d: dict[str, Any] | None) -> str:
    if not d or d.get("p50") is None:
        return "-"
    return f"{d['p50']:.1f} / {d['p95']:.1f}"


def _mirrored(run: dict[str, Any]) -> str:
    short = {k: v for k, v in (run.get("mirroredAnswers") or {}).items() if v < run["agents"]}
    if not short:
        return "all"
    return ", ".join(f"{k} {v}/{run['agents']}" for k, v in sorted(short.items()))


def _ci(run: dict[str, Any]) -> str:
    ci = run.get("modelCallsPerMessageCi95")
    return (
        f"{run['modelCallsPerMessage']} [{ci[0]:.2f}-{ci[1]:.2f}]"
        if ci
        else str(run["modelCallsPerMessage"])
    )


def stress_summary(section: dict[str, Any]) -> str:
    """The stress script's table (bench/stress_chat.py): one row per run, then the totals."""
    yes = {True: "yes", False: "NO"}
    rows = [
        [
            r["run"],
            "chaos" if r["chaos"] else "plain",
            r["seed"],
            yes[r["allSuccess"]],
            r["seconds"],
            r["messages"],
            r["longestSilence"]["seconds"],
            len(r["failedDeliveries"]),
            len(r["wrongThread"]) + len(r["crossThread"]),
            len(r["afterLeaving"]),
            len(r["duplicates"]),
            _overhead(r.get("replyOverheadMs")),
            "ok" if r["ok"] else "FAILED",
        ]
        for r in section["runs"]
    ]
    t = section["totals"]
    return "\n".join(
        [
            f"Stress: {section['agents']} agents + mediator, threads {section['threads']}, "
            f"fake {section['latencyMs']:.0f} ms model",
            _table(
                [
                    "run",
                    "mode",
                    "seed",
                    "all SUCCESS",
                    "s",
                    "messages",
                    "longest silence s",
                    "failed deliveries",
                    "wrong thread",
                    "after leaving",
                    "duplicates",
                    "reply overhead ms p50 / p90",
                    "",
                ],
                rows,
            ),
            f"  {t['ok']}/{t['runs']} runs ok ({t['plainRuns']} plain, {t['chaosRuns']} chaos); "
            f"all SUCCESS in {t['allSuccess']}; longest silence {t['longestSilenceSeconds']} s "
            f"({t['runsWithSilenceOver5s']} runs over {section['silenceLimitSeconds']:g} s); "
            f"failed deliveries {t['failedDeliveriesPlain']} plain, "
            f"{t['failedDeliveriesChaos']} under chaos; wrong thread {t['wrongThread']} "
            f"(+{t['crossThread']} cross-thread), after leaving {t['afterLeaving']}, "
            f"duplicates {t['duplicates']}; reply overhead above the model, every run's "
            f"replies, ms p50 / p90: {_overhead(t.get('replyOverheadMs'))}",
        ]
    )


def _overhead(figures: dict[str, Any] | None) -> str:
    """A run's reply overhead (message -> reply above the model), ms p50 / p90."""
    if not figures or not figures.get("n"):
        return "-"
    return f"{figures['p50']} / {figures['p90']} (n={figures['n']})"


def summary(results: dict[str, Any]) -> str:
    s = results.get("sections", {})
    m = results.get("machine", {})
    parts = [
        f"Benchmark ({'quick' if results.get('quick') else 'full'}), {m.get('cpu')}, "
        f"{m.get('cores')} cores, Python {m.get('python')}, {m.get('date')}",
    ]
    if o := s.get("overhead"):
        parts += [
            "\nRuntime overhead per event (no-op function), ms p50 / p95",
            _table(
                ["raw write", "overhead", "queued", "running", "write->handler", "ratio p50"],
                [
                    [
                        _ms(o["rawWriteMs"]),
                        _ms(o["overheadPerEventMs"]),
                        _ms(o["queuedMs"]),
                        _ms(o["durationMs"]),
                        _ms(o["writeToHandlerStartMs"]),
                        o["overheadRatioP50"],
                    ]
                ],
            ),
            f"  burst: {o['burst']['events']} events in {o['burst']['seconds']} s "
            f"= {o['burst']['eventsPerSecond']} events/s",
        ]
    if lat := s.get("latency"):
        rows = []
        for key, name in (("scripted", "scripted"), ("fakeProvider", "fake 200 ms")):
            r = lat.get(key)
            if r:
                b = r["breakdownMedianMs"]
                rows.append(
                    [
                        name,
                        f"{r['answered']}/{r['samples']}",
                        _ms(r["messageToReplyMs"]),
                        b.get("emulatorToRuntime"),
                        b.get("fanOutRun"),
                        b.get("pubsubHop"),
                        b.get("turnModelCall"),
                        b.get("turnOther"),
                    ]
                )
        parts += [
            "\nChat message written -> agent reply written (1 human, 1 agent), ms",
            _table(
                [
                    "model",
                    "answered",
                    "p50 / p95",
                    "emu->rt",
                    "fan-out",
                    "pubsub hop",
                    "model",
                    "turn rest",
                ],
                rows,
            ),
        ]
    if t := s.get("transitions"):
        parts += [
            "\nStage transitions, 10-stage non-chat experiment, scripted model",
            _table(
                [
                    "agents",
                    "workers",
                    "done",
                    "wall s",
                    "transitions/s",
                    "invocations",
                    "failed",
                    "CPU s py/fs/ps/workers",
                    "Python CPU ms/transition",
                    "answers mirrored",
                ],
                [
                    [
                        r["agents"],
                        f"{r['workers']}{' (profiled)' if r.get('profiled') else ''}",
                        f"{r['finished']}/{r['agents']}",
                        r["wallSeconds"],
                        r["transitionsPerSecond"],
                        r["functionInvocations"],
                        sum(d["errors"] for d in r["deliveries"].values()),
                        "/".join(f"{v:.0f}" for v in r["cpu"]["cpuSeconds"].values()),
                        r.get("pythonCpuMsPerTransition", "-"),
                        _mirrored(r),
                    ]
                    for r in t["runs"]
                ],
            ),
        ]
    if e := s.get("election"):
        parts += [
            "\nModel calls per delivered chat message",
            _table(
                [
                    "agents",
                    "policy",
                    "model",
                    "workers",
                    "messages",
                    "calls/msg [95% CI]",
                    "turns/msg",
                    "replies/msg",
                    "dup",
                    "reply ms p50/p95",
                    "wall s",
                ],
                [
                    [
                        r["agents"],
                        r["policy"],
                        r["model"],
                        r["workers"],
                        r["decidedMessages"],
                        _ci(r),
                        r["turnsPerMessage"],
                        r["repliesPerMessage"],
                        r["duplicates"],
                        _ms(r["replyLatencyMs"]),
                        r["wallSeconds"],
                    ]
                    for r in e["runs"]
                ],
            ),
        ]
    if st := s.get("stress"):
        parts += ["", stress_summary(st)]
    if results.get("targets"):
        mark = {True: "met", False: "MISSED", None: "not measured"}
        parts += [
            "\nTargets",
            _table(
                ["target", "measured", "", "result"],
                [
                    [t["target"], t["measured"], t.get("at") or "", mark[t["met"]]]
                    for t in results["targets"]
                ],
            ),
        ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else Path(__file__).resolve().parent / "results.json"
    print(summary(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
