"""Replay a finished run from its journal, or re-run it with one thing changed.

    python -m tools.replay experiments/E                      # the same run, 0 model requests
    python -m tools.replay debates/D --change 'debates/D:numRounds=3'
    python -m tools.replay experiments/E --change 'stages/S:descriptions.primaryText="Why?"'

Reads the run where it is (the emulators of ``make up``, or the project GOOGLE_CLOUD_PROJECT
names), starts fresh emulators and the functions in this process, writes the run's start
(``tools.replay.runs``) and its journal there, and lets the run go again with every model call
looking in the journal first (``DLAB_JOURNAL_REPLAY``): a request the run made takes its
recorded reply; one it did not make (after a ``--change``) asks the model. A tool call of a
reply taken from the journal takes its recorded result (the tool does not run again); a new
reply's tools run. Prints how many replies it reused and how many calls it made, how many tool
calls it reused and how many tools it ran, and where the two runs' documents differ
(``tools.replay.compare``). Exits 1 when the replay fails or, without ``--change``, differs;
2 on a bad argument.
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
from typing import Any

from google.cloud import firestore

from tools.replay import compare, runs

POLL_S = 0.5
REPLAY = "DLAB_JOURNAL_REPLAY"


class BadChange(ValueError):
    pass


def _change(starts: runs.Documents, run: str, change: str) -> str:
    """Apply ``PATH:FIELD.SUB=JSON`` (PATH absolute, or under the run) to the start documents;
    the document it changed."""
    where, sep, assignment = change.partition(":")
    field, eq, raw = assignment.partition("=")
    if not (sep and eq and field):
        raise BadChange(f"--change {change!r}: write PATH:FIELD=JSON, e.g. 'stages/s1:name=\"x\"'")
    path = where if where.split("/")[0] == run.split("/")[0] else f"{run}/{where}".rstrip("/")
    if path not in starts:
        raise BadChange(f"--change {change!r}: {path} is not among the run's start documents")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        raise BadChange(f"--change {change!r}: the value is not JSON ({error})") from error
    target: dict[str, Any] = starts[path]
    *parents, last = field.split(".")
    for name in parents:
        target = target.setdefault(name, {})
        if not isinstance(target, dict):
            raise BadChange(f"--change {change!r}: {name} is not a map in {path}")
    target[last] = value
    return path


def _write(db: firestore.Client, documents: runs.Documents) -> None:
    """In order, 400 to a batch (a batch takes 500 writes)."""
    items = list(documents.items())
    for start in range(0, len(items), 400):
        batch = db.batch()
        for path, data in items[start : start + 400]:
            batch.set(db.document(path), data)
        batch.commit()


def _made(db: firestore.Client, run: str) -> int:
    rows: Any = db.collection(f"{run}/spend").sum("calls", alias="calls").get()
    return int(sum(item.value or 0 for row in rows for item in row))


def _wait(kind: runs.RunKind, db: firestore.Client, run: str, timeout: float) -> runs.Ended:
    from functions import journal

    until, last = time.monotonic() + timeout, ""
    while time.monotonic() < until:
        ended = kind.ended(db, run)
        if ended is not None:
            return ended
        line = f"  reused {journal.taken[run]} recorded replies, made {_made(db, run)} calls"
        line += f"; reused {journal.tools_reused[run]} tool calls, ran {journal.tools_ran[run]}"
        if line != last:
            print(line, flush=True)
            last = line
        time.sleep(POLL_S)
    return runs.Ended(False, f"not ended after {timeout:g} s")


@contextlib.contextmanager
def _replaying() -> Iterator[None]:
    """Every model call of the functions in this process looks in the journal first."""
    was = os.environ.get(REPLAY)
    os.environ[REPLAY] = "1"
    try:
        yield
    finally:
        if was is None:
            os.environ.pop(REPLAY, None)
        else:
            os.environ[REPLAY] = was


def replay(source: firestore.Client, run: str, changes: list[str], timeout: float) -> int:
    """Replay ``run`` (read from ``source``) on fresh emulators; the exit status."""
    from emulator.runtime import LocalRuntime
    from functions import journal

    kind = runs.kind_of(run)
    starts = kind.starts(source, run)
    changed = [_change(starts, run, c) for c in changes]
    journaled = source.collection(f"{run}/journal").stream()
    recorded = {d.reference.path: d.to_dict() or {} for d in journaled}
    original = compare.dump(source, run)
    kept = {part for path in starts for part in path.split("/")}
    calls = sum(1 for data in recorded.values() if data.get("kind") == journal.TOOL_CALL)
    replies = len(recorded) - calls
    print(
        f"{run}: {len(starts)} start documents, {replies} recorded replies, {calls} tool calls",
        flush=True,
    )
    journal.taken[run] = journal.tools_reused[run] = journal.tools_ran[run] = 0
    project = f"replay-{uuid.uuid4().hex[:8]}"  # a database of its own, on any emulator
    with _replaying(), LocalRuntime(project=project, mode="concurrent", tick_s=1.0) as runtime:
        db = firestore.Client(project=runtime.project)
        _write(db, recorded)
        _write(db, starts)
        ended = _wait(kind, db, run, timeout)
        runtime.wait_until_idle(timeout=60)
        made, reused = _made(db, run), journal.taken[run]
        outcome = compare.compare(original, compare.dump(db, run), kept)
    print(f"replay: {ended.how}; reused {reused} recorded replies, made {made} model calls")
    tools_reused, tools_ran = journal.tools_reused[run], journal.tools_ran[run]
    print(f"tools: reused {tools_reused} recorded tool calls, ran {tools_ran}")
    if changed:
        print(f"changed: {', '.join(changed)}")
    if outcome.same:
        print(f"documents: the same as the run's ({outcome.documents} compared)")
    else:
        print(f"documents: {len(outcome.differing)} place(s) differ from the run's:")
        for line in outcome.differing:
            print(f"  {line}")
    return 0 if ended.ok and (outcome.same or changed) else 1


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tools.replay", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("run", help="experiments/ID, debates/ID, societies/ID or conversations/ID")
    parser.add_argument(
        "--change",
        action="append",
        default=[],
        metavar="PATH:FIELD=JSON",
        help="change a start document's field before the replay (repeatable)",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds (default 600)")
    parser.add_argument("--project", default=os.environ.get("GOOGLE_CLOUD_PROJECT"))
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    if not args.project:
        parser.error("no project: pass --project or set GOOGLE_CLOUD_PROJECT")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    try:
        return replay(firestore.Client(project=args.project), args.run, args.change, args.timeout)
    except (runs.NotReplayable, BadChange) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
