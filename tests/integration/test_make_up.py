"""``python -m emulator up`` as a person runs it: the banner, and an experiment that survives a
restart with ``--export-on-exit`` / ``--import`` and carries on from where it was."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from google.cloud import firestore
from raw_docs import human, move_human

from functions.registry import REGISTRY, ScheduleTrigger
from shared.models import ParticipantProfile, ParticipantStatus
from tools.load_template import load

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "templates" / "group_decision_locked.json"
PROJECT = "demo-up-test"
_HOST = re.compile(r"Firestore\s+(\S+)")
STARTUP_S = 180.0
"""How long ``make up`` may take to print its banner: what starting may take (an emulator's
readiness up to 30 s, an admin call such as loading the rules up to 120 s), and a margin."""


class Up:
    """One ``python -m emulator up`` child process, stopped with Ctrl-C like a person does."""

    def __init__(self, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_EMULATOR_HOST")}
        env["DLAB_MODEL_OVERRIDE"] = "SCRIPTED"
        command = [sys.executable, "-m", "emulator", "up", "--free-ports", "--console-port", "0"]
        self.proc = subprocess.Popen(
            [*command, "--project", PROJECT, "--tick", "0.5", *args],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        # 60 s was not enough at load 10-20 (the banner came just after)
        self.banner = self._read_until("Live log", timeout=STARTUP_S)
        match = _HOST.search(self.banner)
        assert match, self.banner
        self.firestore_host = match[1]

    def _read_until(self, marker: str, timeout: float) -> str:
        assert self.proc.stdout is not None
        lines: list[str] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if marker in line:
                return "".join(lines)
        self.proc.kill()
        raise AssertionError(f"no {marker!r} from make up:\n{''.join(lines)}")

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGINT)
        try:
            out, _ = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
            raise AssertionError(f"make up did not stop within 60 s of Ctrl-C:\n{out}") from None
        assert self.proc.returncode == 0, out
        return out


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Up], firestore.Client]]:
    def connect(up: Up) -> firestore.Client:
        monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", up.firestore_host)
        return firestore.Client(project=PROJECT)

    yield connect


def _agents(db: firestore.Client, experiment: str) -> list[ParticipantProfile]:
    docs = db.collection(f"experiments/{experiment}/participants").get()
    found = [ParticipantProfile.model_validate(d.to_dict()) for d in docs]
    return [p for p in found if p.is_agent]


def _wait_for(check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.3)


def test_restart_with_import_keeps_the_experiment_and_its_agents_carry_on(client, tmp_path):
    data = tmp_path / "data"
    first = Up("--export-on-exit", str(data))
    try:
        scheduled = ", ".join(s.name for s in REGISTRY if isinstance(s.trigger, ScheduleTrigger))
        assert "watchdog" in scheduled.split(", ")
        assert f"scheduled ({scheduled}) ticked every 0.5 s" in first.banner
        api = re.search(r"REST API\s+(\S+)", first.banner)
        assert api, first.banner  # the API answers there, and asks for its key
        assert requests.get(f"{api[1]}/health", timeout=30).json()["error"].startswith("Missing")
        db = client(first)
        result = load(db, json.loads(TEMPLATE.read_text()), agents=2)
        e = result.experiment_id
        h = human(db, e, "tos", cohort=result.cohort_id)
        _wait_for(lambda: {a.current_stage_id for a in _agents(db, e)} == {"survey"}, "survey", 30)
        time.sleep(1.0)  # they stay there: the stage waits for the human
        assert {a.current_stage_id for a in _agents(db, e)} == {"survey"}
    finally:
        out = first.stop()
    assert f"Exported the Firestore data to {data}" in out
    assert re.search(r"agent \w{8} .*joined \(GEMINI gemini-2.5-flash → runs on SCRIPTED\)", out)
    assert re.search(r"agent \w{8} .*: survey · IN_PROGRESS", out), out
    log_file = Path(re.search(r"full log\s+(\S+)", first.banner)[1])
    assert not log_file.parent.exists()  # the temporary folder went with make up

    second = Up("--import", str(data))
    try:
        assert f"imported    {data}" in second.banner
        db = client(second)
        agents = _agents(db, e)
        assert {a.current_stage_id for a in agents} == {"survey"} and len(agents) == 2
        for stage in ("info", "survey"):
            move_human(db, e, h, stage)
        _wait_for(lambda: {a.current_stage_id for a in _agents(db, e)} == {"ranking"}, "ranking")
        move_human(db, e, h, "ranking")  # ranking needs 3 participants
        _wait_for(
            lambda: all(a.current_status == ParticipantStatus.SUCCESS for a in _agents(db, e)),
            "the agents to finish after the restart",
        )
    finally:
        out = second.stop()
    assert re.search(r"agent \w{8} .*: thanks · SUCCESS", out), out
