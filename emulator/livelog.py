"""The compact live log of ``make up``: one line per agent move, chat message and error.

It reads Firestore (all experiments of the project) rather than the delivery log, because the
moves are what a person watches; every delivery still goes to a file (and to the screen with
``--verbose``). Polling keeps it independent of the runtime: it works the same with ``--attach``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from google.cloud import firestore

from emulator import model_choice
from emulator.delivery import DeliveryRecord

_RED, _RESET = "\033[31m", "\033[0m"
READ_TIMEOUT_S = 30.0
"""One read of a collection group, at most (the client's default is 300 s, retried for 300 s
more): ``make up``'s main thread polls, and a poll that does not end held Ctrl-C up."""


def _short(text: Any, limit: int = 100) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _experiment_of(path: str) -> str:
    return path.split("/")[1] if path.startswith("experiments/") else "?"


def delivery_line(record: DeliveryRecord) -> str:
    error = record.error.strip().splitlines()[-1] if record.error else ""
    return (
        f"{record.outcome:22} {record.function:22} {record.subject} "
        f"({record.duration_ms:.0f} ms) {error}"
    ).rstrip()


class LiveLog:
    """Diffs what it last saw of the participants, chats and error records, and prints changes."""

    def __init__(
        self,
        db: firestore.Client,
        override: str | None,
        out: TextIO = sys.stdout,
        color: bool | None = None,
    ) -> None:
        self.db = db
        self.override = override
        self.out = out
        self.color = out.isatty() if color is None else color
        self._agents: dict[str, tuple[str, str]] = {}
        self._seen_chats: set[str] = set()
        self._errors: dict[str, int] = {}
        self._unreadable: dict[str, str] = {}
        self._quiet = False

    def _print(self, text: str, error: bool = False) -> None:
        if self._quiet:
            return
        stamp = time.strftime("%H:%M:%S")
        line = f"{stamp} {text}"
        if error and self.color:
            line = f"{_RED}{line}{_RESET}"
        print(line, file=self.out, flush=True)

    def notice(self, text: str) -> None:
        """A line from the runtime about its emulators (one restarted, its triggers re-armed)."""
        self._print(f"⚠ {text}", error=True)

    def poll(self, timeout: float = READ_TIMEOUT_S) -> None:
        """Show what changed; each read bounded by ``timeout`` (a DeadlineExceeded past it)."""
        self._each("participants", self._participant, timeout)
        self._each("chats", self._chat, timeout)
        self._each("errors", self._error, timeout)

    def prime(self) -> None:
        """Remember what already exists (an imported experiment) without printing it all."""
        self._quiet = True
        try:
            self.poll()
        finally:
            self._quiet = False

    def _each(
        self, group: str, handle: Callable[[str, dict[str, Any]], None], timeout: float
    ) -> None:
        reads = self.db.collection_group(group).stream(retry=None, timeout=timeout)
        for snap in reads:
            self.show(handle, snap.reference.path, snap.to_dict() or {})

    def show(
        self, handle: Callable[[str, dict[str, Any]], None], path: str, data: dict[str, Any]
    ) -> None:
        """A document of any shape written in the console gets a line of its own, never a
        crash of ``make up`` (which would take the emulators and their data with it)."""
        try:
            handle(path, data)
        except Exception as error:  # the log reads what people write: anything at all
            if self._unreadable.get(path) != repr(data):
                self._unreadable[path] = repr(data)
                self._print(f"? {path}: cannot show it ({type(error).__name__}: {error})")

    def _participant(self, path: str, data: dict[str, Any]) -> None:
        agent = data.get("agentConfig")
        state = (str(data.get("currentStageId") or "-"), str(data.get("currentStatus") or "-"))
        previous = self._agents.get(path)
        if previous == state:
            return
        self._agents[path] = state
        name = _short(f"{data.get('avatar') or ''} {data.get('name') or ''}", 24)
        who = f"{'agent' if agent else 'human'} {path.rsplit('/', 1)[-1][:8]} {name}".rstrip()
        where = f"[{_experiment_of(path)[:8]}]"
        if previous is None and isinstance(agent, dict):
            api = str((agent.get("modelSettings") or {}).get("apiType") or "GEMINI")
            model = (agent.get("modelSettings") or {}).get("modelName") or ""
            runs = model_choice.runs_on(api, self.override)
            on = f"{api} {model}".strip() + (f" → runs on {runs}" if runs != api else "")
            self._print(f"{where} {who} joined ({on})")
        self._print(f"{where} {who}: {state[0]} · {state[1]}")

    def _chat(self, path: str, data: dict[str, Any]) -> None:
        if path in self._seen_chats:
            return
        self._seen_chats.add(path)
        profile = data.get("profile")
        name = profile.get("name") if isinstance(profile, dict) else None
        who = name or data.get("senderId") or data.get("type") or "?"
        thread = f"({data['discussionId']}) " if data.get("discussionId") else ""
        self._print(f"[{_experiment_of(path)[:8]}] 💬 {thread}{who}: {_short(data.get('message'))}")

    def _error(self, path: str, data: dict[str, Any]) -> None:
        occurrences = int(data.get("occurrences") or 1)
        if self._errors.get(path) == occurrences:
            return
        self._errors[path] = occurrences
        times = f" ×{occurrences}" if occurrences > 1 else ""
        self._print(
            f"[{_experiment_of(path)[:8]}] ✗ {data.get('document')} [{data.get('field')}]: "
            f"{_short(data.get('reason'), 140)}{times}",
            error=True,
        )

    def deliveries(self, records: list[DeliveryRecord], log_file: TextIO, verbose: bool) -> None:
        """Every delivery to ``log_file``; failures (and all, when verbose) to the screen."""
        for record in records:
            line = delivery_line(record)
            print(line, file=log_file, flush=True)
            if verbose or record.outcome == "error":
                self._print(line, error=record.outcome == "error")


def open_log(directory: Path) -> TextIO:
    directory.mkdir(parents=True, exist_ok=True)
    return open(directory / "deliveries.log", "a", encoding="utf-8")
