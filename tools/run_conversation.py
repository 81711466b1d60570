"""Run a conductor conversation from the terminal: live progress, then the transcript.

    python -m tools.run_conversation "Hi, I'm Dana; my firewall drops port 443" --local
    python -m tools.run_conversation "..." --workflow example      # against `make up`
    python -m tools.run_conversation --resume ID                   # a FAILED one, once fixed
    python -m tools.run_conversation "..." --workflow-dir DIR [--config FILE] --local

``--local`` starts the emulators and the functions in this process (the scripted model unless
a provider is configured, see README), loads ``workflows/<workflow>`` and runs the query; without
it the command writes the conversation into the emulators of ``make up`` (or the project named
by GOOGLE_CLOUD_PROJECT) and follows it there. A conversation that FAILS ends the command at
once, non-zero, with its error records printed (docs/CONDUCTOR.md, *Faults and bounds*).
``--workflow-dir`` loads a workflow folder of either format (a Diskurs project as Diskurs spells
it, docs/DISKURS.md) and allows its files to the functions (``DLAB_WORKFLOW_DIRS``).
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

from shared.conductor.documents import ACTIVE, Conversation, Step
from tools.load_workflow import WorkflowError, read_workflow, write
from tools.owner import owned

REPO_ROOT = Path(__file__).resolve().parents[1]


def _line(step: Step) -> str:
    if step.kind == "conductor":
        d = step.decision
        what = f"→ {d.next_agent} ({d.by}{': ' + d.reason if d.reason else ''})" if d else ""
        return f"conductor {what}"
    output = json.dumps(step.output, ensure_ascii=False, default=str) if step.output else ""
    if step.kind == "join":
        return f"{step.agent} joined {step.input.get('branches', 0)} branches {output}"
    final = "  [final: hands back]" if step.is_final else ""
    note = f"  ({step.note})" if step.note else ""
    return f"{step.agent} (turn {step.turn}, step {step.agent_step}) {output}{final}{note}"


def follow(
    db: firestore.Client, conversation_id: str, timeout: float = 300, out: Any = None
) -> Conversation:
    """Print each step as it completes until the conversation ends; returns it."""
    out = out or sys.stdout
    shown: set[int] = set()
    t0 = time.monotonic()
    steps = db.collection(f"conversations/{conversation_id}/steps")
    while True:
        conv = Conversation.model_validate(
            db.document(f"conversations/{conversation_id}").get().to_dict()
        )  # before the steps: a conversation that ended has all its steps printed below
        for snap in sorted(steps.get(), key=lambda s: s.id):
            step = Step.model_validate(snap.to_dict())
            if step.index in shown or step.status == "pending":
                continue
            shown.add(step.index)
            attempts = len(list(snap.reference.collection("attempts").list_documents()))
            tries = f" ({attempts} attempts)" if attempts > 1 else ""
            error = f"  ✗ {step.error}" if step.error else ""
            print(
                f"[{time.monotonic() - t0:6.1f}s] #{step.index} {_line(step)}{tries}{error}",
                file=out,
            )
        if conv.status not in ACTIVE:
            return conv
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"conversation {conversation_id} still {conv.status}")
        time.sleep(0.2)


def error_records(db: firestore.Client, conversation_id: str) -> list[dict[str, Any]]:
    """The conversation's error records (``conversations/{c}/errors``), oldest first."""
    found = [
        d.to_dict() or {} for d in db.collection(f"conversations/{conversation_id}/errors").get()
    ]
    return sorted(found, key=lambda r: str(r.get("firstSeen") or ""))


def report_failure(db: firestore.Client, conv: Conversation, cid: str, out: Any) -> None:
    """What ended the conversation, and how to go on once its cause is fixed."""
    if conv.failure is not None:
        f = conv.failure
        print(f"failed   {f.document} · {f.field} after {f.attempts} attempt(s)", file=out)
    for record in error_records(db, cid):
        where = f"{record.get('document')} · {record.get('field')}"
        print(f"record   {where}: {record.get('reason')}", file=out)
    if conv.failure is not None:
        print(f"retry    once fixed: python -m tools.run_conversation --resume {cid}", file=out)


def resume(db: firestore.Client, conversation_id: str) -> str:
    """Set a FAILED conversation back to RUNNING (PENDING if it never started): the watchdog
    re-arms the unit that ended and runs it with a fresh budget of attempts."""
    ref = db.document(f"conversations/{conversation_id}")
    conv = Conversation.model_validate(ref.get().to_dict())
    status = "RUNNING" if conv.current_step >= 0 else "PENDING"
    ref.update({"status": status})
    return status


def transcript(conv: Conversation, out: Any = None) -> None:
    out = out or sys.stdout
    print(f"\nstatus   {conv.status}", file=out)
    if conv.outcome:
        print(f"outcome  {conv.outcome}", file=out)
    if conv.result is not None:
        print(f"result   {json.dumps(conv.result, ensure_ascii=False, default=str)}", file=out)
    elif conv.answer:
        print(f"answer   {conv.answer}", file=out)
    for warning in conv.warnings:
        print(f"warning  {warning}", file=out)
    if conv.error:
        print(f"error    {conv.error.document} · {conv.error.field}: {conv.error.reason}", file=out)
    print("memory", file=out)
    for name, kept in conv.memory.items():
        print(f"  {name:<14} {kept.value!r}  (set by {kept.agent}, turn {kept.turn})", file=out)


def allow(folder: Path) -> None:
    """Let the functions import the folder's files (``DLAB_WORKFLOW_DIRS``), in this process
    and the runtime's it starts."""
    known = [p for p in os.environ.get("DLAB_WORKFLOW_DIRS", "").split(":") if p]
    os.environ["DLAB_WORKFLOW_DIRS"] = ":".join([*known, str(folder.resolve())])


@contextlib.contextmanager
def local_backend() -> Iterator[firestore.Client]:
    """The emulators and the functions, started in this process, reset (``--local``)."""
    from emulator.config import default_processes
    from emulator.runtime import LocalRuntime

    os.environ.setdefault("DLAB_MODEL_OVERRIDE", "SCRIPTED")
    with LocalRuntime(mode="concurrent", processes=default_processes()) as rt:
        rt.reset()
        yield firestore.Client(project=rt.project)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("query", nargs="?", default="")
    parser.add_argument("--resume", metavar="ID", help="resume a FAILED conversation, follow it")
    parser.add_argument("--workflow", default="", help="workflow id (default: example)")
    parser.add_argument("--workflow-dir", type=Path, help="a workflow folder to load (--local)")
    parser.add_argument("--config", type=Path, help="its config file (default: config.yml)")
    parser.add_argument("--local", action="store_true", help="start emulators and functions here")
    parser.add_argument("--id", help="conversation id (default: a new one)")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--project", default=os.environ.get("GOOGLE_CLOUD_PROJECT", "demo-dlab"))
    return parser


def _load(db: firestore.Client, args: argparse.Namespace) -> str | None:
    """Load the workflow folder (``--local`` or ``--workflow-dir``), its warnings printed;
    the workflow's id, or None (the error printed) when it cannot be loaded."""
    folder = args.workflow_dir or REPO_ROOT / "workflows" / (args.workflow or "example")
    workflow_id = str(args.workflow or (folder.resolve().name if args.workflow_dir else "example"))
    if not (args.local or args.workflow_dir is not None):
        return workflow_id
    try:
        workflow, agents = read_workflow(folder, args.config)
    except WorkflowError as error:
        print(f"error: {error}", file=sys.stderr)
        return None
    for warning in workflow.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return write(db, workflow, agents, workflow_id)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not (args.query or args.resume):
        parser.error("give a query, or --resume ID")
    if args.resume and args.local:
        parser.error("--resume follows a conversation of `make up` (--local starts empty)")
    if args.workflow_dir is not None:
        allow(args.workflow_dir)
    conversation_id = args.resume or args.id or uuid.uuid4().hex[:12]
    clients = (
        local_backend()
        if args.local
        else contextlib.nullcontext(firestore.Client(project=args.project))
    )
    with clients as db:
        if args.resume:
            print(f"conversation  conversations/{conversation_id} {resume(db, conversation_id)}")
            return _outcome(db, conversation_id, args.timeout)
        workflow_id = _load(db, args)
        if workflow_id is None:
            return 1
        db.document(f"conversations/{conversation_id}").set(
            owned({"query": args.query, "workflowId": workflow_id, "status": "PENDING"})
        )
        print(f"conversation  conversations/{conversation_id} ({workflow_id})")
        return _outcome(db, conversation_id, args.timeout)


def _outcome(db: firestore.Client, conversation_id: str, timeout: float) -> int:
    """Follow to the end: 0 when DONE; 1 at once when it ended otherwise (the error records
    printed); 2 when it still runs after ``timeout``."""
    try:
        conv = follow(db, conversation_id, timeout)
    except TimeoutError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    transcript(conv)
    if conv.status == "DONE":
        return 0
    report_failure(db, conv, conversation_id, sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
