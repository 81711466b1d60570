"""The agent society from the command line.

    python -m tools.society create society.json [--id ID] [--follow] [--until-day N]
    python -m tools.society follow ID [--until-day N]
    python -m tools.society pause|resume ID
    python -m tools.society set ID NAME VALUE         # a setting for the next day (VALUE is JSON)
    python -m tools.society give ID --agent N --resource food --amount 5   # negative: take
    python -m tools.society export ID --out DIR       # JSONL and CSV for analysis
    python -m tools.society check ID                  # the invariants and the state hash
    python -m tools.society demo [--agents 12] [--days 5] [--mode chaos]   # all local, live

Every command but ``demo`` works on the emulators (FIRESTORE_EMULATOR_HOST, as ``make up``
prints) or on a real project (application default credentials).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from google.cloud import firestore

from shared.models import DocumentError
from shared.society import identity
from shared.society.models import Society
from tools.society import client

POLL_S = 0.5


def _db() -> firestore.Client:
    return firestore.Client(project=os.environ.get("GOOGLE_CLOUD_PROJECT", "demo-dlab"))


class SocietyFailed(Exception):
    """The society stopped, FAILED: following it further would wait for nothing."""

    def __init__(self, society: Society, records: list[dict[str, Any]]) -> None:
        failure = society.failure
        why = f"{failure.document} ({failure.field}): {failure.reason}" if failure else "?"
        super().__init__(f"society {society.id} FAILED: {why}")
        self.records = records


def _check_running(db: firestore.Client, sid: str) -> None:
    society = client.read_society(db, sid)
    if society.status == "failed":
        raise SocietyFailed(society, client.error_records(db, sid))


def report_failure(failed: SocietyFailed, err: Any = None) -> int:
    """Print why the society failed, with its error records (to stderr); the exit status."""
    err = err or sys.stderr
    print(failed, file=err, flush=True)
    for record in failed.records:
        print(
            f"  error record: {record.get('document')} [{record.get('field')}] "
            f"{record.get('reason')} (function {record.get('function')})",
            file=err,
            flush=True,
        )
    return 1


def follow(db: firestore.Client, sid: str, until: int | None = None, out: Any = sys.stdout) -> int:
    """Print one line per closed day (and progress while one is open) until ``until`` (default:
    the society's last day) has closed; the number of days closed. Raises SocietyFailed at once
    when the society fails."""
    society = client.read_society(db, sid)
    until = until or society.settings.days
    shown, started, last_progress = 0, time.monotonic(), ""
    while True:
        _check_running(db, sid)
        summaries = client.summaries(db, sid)
        for s in summaries[shown:]:
            elapsed = time.monotonic() - started
            acted = sum(s.actions.values()) + len(s.invalid)
            laws = len(client.snapshot(db, sid, s.day + 1)[1].laws)
            print(
                f"[{elapsed:7.1f}s] day {s.day:3d} closed: {acted} actions "
                f"({acted / max(elapsed, 1e-3):.1f}/s overall), invalid {len(s.invalid)}, "
                f"rejected {len(s.rejected)}, active {s.active}, dormant {s.dormant}, "
                f"laws {laws}, built {s.built}, pool food {s.pool.food:g}, "
                f"model calls {s.model_calls}",
                file=out,
                flush=True,
            )
        shown = len(summaries)
        if shown >= until:
            return shown
        progress = _progress(db, sid, shown + 1)
        if progress and progress != last_progress:
            print(f"           {progress}", file=out, flush=True)
            last_progress = progress
        time.sleep(POLL_S)


def _progress(db: firestore.Client, sid: str, day: int) -> str:
    current = next((d for d in client.days(db, sid) if d.day == day), None)
    if current is None:
        return ""
    if current.status != "open":
        return f"day {day}: {current.status}"
    refs = db.collection(f"societies/{sid}/days/{day:05d}/actions").list_documents()
    expected = identity.Expected.of(current)
    acted = sum(1 for ref in refs if expected.names_slot(ref.path))  # strays are not actions
    return f"day {day}: {acted}/{current.expected} acted"


def _demo(args: argparse.Namespace) -> int:
    from emulator.chaos import ChaosSettings
    from emulator.runtime import LocalRuntime

    os.environ.setdefault("DLAB_MODEL_OVERRIDE", "SCRIPTED")
    chaos = ChaosSettings.from_env() if args.mode == "chaos" else None
    settings = {"agents": args.agents, "days": args.days, "seed": args.seed}
    runtime = LocalRuntime(mode=args.mode, tick_s=1.0, chaos=chaos, processes=args.processes)
    with runtime:
        db = firestore.Client(project=runtime.project)
        sid = client.create(db, settings, name="demo")
        print(f"society {sid}: {args.agents} agents, {args.days} days, scripted model", flush=True)
        follow(db, sid, args.days)
        runtime.wait_until_idle(timeout=60)
        audit = client.audit(db, sid)
        print(f"invariants: {'OK' if audit.ok else audit.problems} over {audit.days} days")
        print(f"state hash: {client.state_hash(db, sid)[:16]}")
        if args.out:
            for path in client.export(db, sid, Path(args.out)):
                print(f"exported {path}")
    return 0 if audit.ok else 1


def _args(argv: list[str] | None) -> argparse.Namespace:
    from emulator.config import add_processes_argument  # light: ports and worker processes

    parser = argparse.ArgumentParser(prog="python -m tools.society", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create", help="create a society from a JSON file")
    create.add_argument("file", type=Path)
    create.add_argument("--id", default="")
    create.add_argument("--follow", action="store_true")
    create.add_argument("--until-day", type=int)
    fol = sub.add_parser("follow", help="live progress until a day has closed")
    fol.add_argument("id")
    fol.add_argument("--until-day", type=int)
    for name in ("pause", "resume", "check"):
        sub.add_parser(name).add_argument("id")
    setting = sub.add_parser("set", help="change a setting for the next day")
    setting.add_argument("id")
    setting.add_argument("name")
    setting.add_argument("value", type=json.loads)
    give = sub.add_parser("give", help="give (or, negative, take) resources")
    give.add_argument("id")
    give.add_argument("--agent", type=int, required=True, help="0: the common pool")
    give.add_argument("--resource", choices=["food", "energy", "materials"], required=True)
    give.add_argument("--amount", type=float, required=True)
    give.add_argument("--note", default="")
    export = sub.add_parser("export", help="JSONL and CSV of a run")
    export.add_argument("id")
    export.add_argument("--out", type=Path, required=True)
    demo = sub.add_parser("demo", help="emulators, runtime and a small society, live")
    demo.add_argument("--agents", type=int, default=12)
    demo.add_argument("--days", type=int, default=5)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--mode", choices=["serial", "concurrent", "chaos"], default="concurrent")
    demo.add_argument("--out", default="", help="export the run to this folder")
    add_processes_argument(demo)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    try:
        if args.command == "demo":
            return _demo(args)
        return _command(args, _db())
    except SocietyFailed as failed:
        return report_failure(failed)


def _command(args: argparse.Namespace, db: firestore.Client) -> int:
    if args.command == "create":
        name, settings = client.from_file(args.file)
        sid = client.create(db, settings, name=name, society_id=args.id)
        print(sid, flush=True)
        if args.follow:
            follow(db, sid, args.until_day)
    elif args.command == "follow":
        follow(db, args.id, args.until_day)
    elif args.command in ("pause", "resume"):
        client.set_status(db, args.id, "paused" if args.command == "pause" else "running")
    elif args.command == "set":
        try:
            client.set_setting(db, args.id, args.name, args.value)
        except DocumentError as error:  # a value the society could not run with: not written
            print(error, file=sys.stderr)
            return 1
    elif args.command == "give":
        print(client.intervene(db, args.id, args.agent, args.resource, args.amount, args.note))
    elif args.command == "export":
        for path in client.export(db, args.id, args.out):
            print(path)
    elif args.command == "check":
        audit = client.audit(db, args.id)
        print(f"{audit.days} days closed; invariants {'OK' if audit.ok else audit.problems}")
        print(f"state hash {client.state_hash(db, args.id)}")
        return 0 if audit.ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
