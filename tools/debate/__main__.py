"""``python -m tools.debate FILE``: create a debate from a JSON file of settings and data, follow
its progress (layer, clusters, rounds, statements, tokens) and write its transcript.

    python -m tools.debate templates/debates/stock_trading.json            # against make up
    python -m tools.debate templates/debates/stock_trading.json --local    # own emulators
    python -m tools.debate FILE --baselines    # also all-to-all and self-consistency, compared
    python -m tools.debate --pause ID | --resume ID | --export ID [--out FILE.md]

A debate that FAILS (a user function raised, the model never answered validly, the provider
kept failing) ends the command at once with exit status 3 and its error records printed;
``--resume ID`` after the fix runs it again. A file the debate's start would refuse (a field
out of range, an unknown user function, a data entry without data or too large for the leaf
agents) is refused before anything is written, exit status 2, naming the field.

Without ``--local`` it uses the emulators of FIRESTORE_EMULATOR_HOST (``make up`` prints the
exports) or, unset, the real project of application default credentials.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from google.cloud import firestore

from shared.debate import loading
from shared.debate.models import DebateMode
from shared.models import DocumentError
from tools.debate import state as debate_state
from tools.debate.transcript import markdown
from tools.owner import owned

BASELINES = (DebateMode.ALL_TO_ALL, DebateMode.SELF_CONSISTENCY)


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tools.debate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("file", nargs="?", type=Path, help="JSON settings and data")
    parser.add_argument("--id", default="", help="debate document id (default: random)")
    parser.add_argument("--baselines", action="store_true", help="also run the two baselines")
    parser.add_argument("--local", action="store_true", help="start emulators and functions here")
    parser.add_argument("--project", default=os.environ.get("GOOGLE_CLOUD_PROJECT", "demo-dlab"))
    parser.add_argument("--out", type=Path, help="transcript file (default: <id>.md)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait")
    parser.add_argument("--pause", metavar="ID")
    parser.add_argument("--resume", metavar="ID")
    parser.add_argument("--export", metavar="ID")
    return parser.parse_args(argv)


@contextlib.contextmanager
def _backend(local: bool, project: str) -> Iterator[firestore.Client]:
    if not local:
        yield firestore.Client(project=project)
        return
    from emulator.config import default_processes  # dev-only: imported only with --local
    from emulator.runtime import LocalRuntime

    with LocalRuntime(project=project, tick_s=2.0, processes=default_processes()) as runtime:
        yield firestore.Client(project=runtime.project)


def _line(debate_id: str, progress: dict[str, Any]) -> str:
    return (
        f"{debate_id}: {progress['status']}{' (paused)' if progress['paused'] else ''} · layer "
        f"{progress['layer']} · clusters {progress['clusters']} · rounds {progress['rounds']} · "
        f"statements {progress['statements']} · tokens {progress['tokens']:,} · model calls "
        f"{progress['modelCalls']} · errors {progress['errors']}"
    )


def follow(db: firestore.Client, ids: list[str], timeout: float) -> dict[str, Any]:
    """Print a progress line whenever a debate's figures change, until all are done or one
    FAILED (nothing moves then until someone touches it: waiting out the timeout would only
    hide the error)."""
    last: dict[str, str] = {}
    end = time.monotonic() + timeout
    states: dict[str, Any] = {}
    while time.monotonic() < end:
        for debate_id in ids:
            states[debate_id] = debate_state.read(db, debate_id)
            line = _line(debate_id, states[debate_id].progress())
            if last.get(debate_id) != line:
                print(line, flush=True)
                last[debate_id] = line
        if all(s.done for s in states.values()) or any(s.failed for s in states.values()):
            break
        time.sleep(1.0)
    return states


def report_failures(states: dict[str, Any]) -> bool:
    """Print each FAILED debate's failure and its error records to stderr; True if any."""
    failed = {i: s for i, s in states.items() if s.failed}
    for debate_id, s in failed.items():
        failure = s.debate.failure
        print(f"{debate_id}: FAILED", file=sys.stderr)
        if failure is not None:
            print(
                f"  {failure.document} · {failure.field} · after {failure.attempts} attempt(s): "
                f"{failure.reason}",
                file=sys.stderr,
            )
        for record in s.errors:
            where = f"{record.get('document', '')} · {record.get('field', '')}"
            print(f"  error record: {where}: {record.get('reason', '')}", file=sys.stderr)
        print(
            f"  fix the cause, then touch debates/{debate_id} (any field, e.g. "
            f"`--resume {debate_id}`) to run it again",
            file=sys.stderr,
        )
    return bool(failed)


def compare(states: dict[str, Any]) -> str:
    rows = ["| run | mode | model calls | tokens | decision |", "|---|---|---|---|---|"]
    for debate_id, s in states.items():
        decision = (s.debate.decision or {}).get("conclusion", "-")
        rows.append(
            f"| {debate_id} | {s.debate.mode} | {s.model_calls} | {s.tokens:,} | {decision} |"
        )
    return "\n".join(rows)


def _read(file: Path, debate_id: str) -> dict[str, Any]:
    """The file's settings, checked as the debate's start would check them (``loading``)."""
    settings = owned(json.loads(file.read_text()))
    loading.load(settings, f"debates/{debate_id}")
    return settings


def _create(
    db: firestore.Client, settings: dict[str, Any], debate_id: str, baselines: bool
) -> list[str]:
    ids = [debate_id]
    db.document(f"debates/{debate_id}").set(settings)
    for mode in BASELINES if baselines else ():
        ids.append(f"{debate_id}-{mode.value}")
        db.document(f"debates/{ids[-1]}").set({**settings, "mode": mode.value})
    return ids


def _command(db: firestore.Client, args: argparse.Namespace) -> int | None:
    """--pause, --resume or --export: its exit status; None for none of them."""
    if args.pause:
        db.document(f"debates/{args.pause}").update({"paused": True})
        return 0
    if args.resume:  # a touch too: a FAILED debate runs again, its ended units re-armed
        touch = {"paused": False, "resumedAt": firestore.SERVER_TIMESTAMP}
        db.document(f"debates/{args.resume}").update(touch)
        return 0
    if args.export:
        text = markdown(debate_state.read(db, args.export))
        (args.out or Path(f"{args.export}.md")).write_text(text)
        return 0
    return None


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    debate_id = args.id or f"debate-{uuid.uuid4().hex[:8]}"
    settings: dict[str, Any] = {}
    if args.file is not None and not (args.pause or args.resume or args.export):
        try:  # before any emulator starts or document is written
            settings = _read(args.file, debate_id)
        except DocumentError as error:
            where = f"{error.document} · {error.field}"
            print(f"{args.file}: refused ({where}): {error.reason}", file=sys.stderr)
            return 2
    with _backend(args.local, args.project) as db:
        done = _command(db, args)
        if done is not None:
            return done
        if args.file is None:
            print("a FILE (or --pause/--resume/--export ID) is required", file=sys.stderr)
            return 2
        ids = _create(db, settings, debate_id, args.baselines)
        states = follow(db, ids, args.timeout)
        if report_failures(states):
            return 3
        out = args.out or Path(f"{debate_id}.md")
        out.write_text(markdown(states[debate_id]))
        print(f"transcript: {out}")
        print(compare(states))
        return 0 if all(s.done for s in states.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
