"""make up's pieces that need no emulator: ports, the per-provider model choice, the console's
validation and JSON mapping, finding an export to import."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from pathlib import Path

from console import firestore_json, validation
from emulator import config, model_choice, persistence, processes

EXPERIMENT = "experiments/e1"


def test_firebase_json_ports_are_the_defaults() -> None:
    ports = config.firebase_ports()
    assert (ports.firestore, ports.pubsub, ports.functions) == (8080, 8085, 5001)
    assert ports.console == config.DEFAULT_CONSOLE_PORT


def test_a_taken_port_falls_back_to_a_free_one_and_says_so() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        ports, notes = config.resolve(config.Ports(firestore=busy))
        kept, _ = config.resolve(config.Ports(firestore=busy), keep=("firestore",))
    assert ports.firestore != busy and ports.firestore > 0 and ports.pubsub > 0
    assert notes == [f"port {busy} (firestore) is taken: using {ports.firestore} instead"]
    assert kept.firestore == busy


def test_only_providers_without_credentials_are_scripted() -> None:
    env = {"GEMINI_API_KEY": "k"}
    value = model_choice.override(None, env)
    assert model_choice.runs_on("GEMINI", value) == "GEMINI"
    assert model_choice.runs_on("OPENAI", value) == "SCRIPTED"
    assert model_choice.runs_on("OLLAMA", value) == "SCRIPTED"
    assert model_choice.describe(value) == (
        "own provider: GEMINI · on SCRIPTED: VERTEX_AI, OPENAI, OLLAMA, CLAUDE"
    )
    assert model_choice.override("none", env) is None
    assert model_choice.override(None, {"DLAB_MODEL_OVERRIDE": "OLLAMA"}) == "OLLAMA"
    assert model_choice.runs_on("GEMINI", model_choice.override(None, {})) == "SCRIPTED"


def test_a_minimal_agent_participant_is_valid_and_a_bad_status_is_not() -> None:
    path = f"{EXPERIMENT}/participants/p1"
    minimal = {"agentConfig": {"modelSettings": {"apiType": "SCRIPTED", "modelName": ""}}}
    assert validation.validate(path, minimal) is None
    problem = validation.validate(path, {**minimal, "currentStatus": 5})
    assert problem is not None and problem.field == "currentStatus" and "got 5" in problem.reason
    assert validation.validate(path, [1]) is not None  # not an object
    assert validation.validate(f"{EXPERIMENT}/anything/x", {"free": 1}) is None  # no model


def test_stages_are_checked_by_their_kind() -> None:
    path = f"{EXPERIMENT}/stages/s1"
    assert validation.validate(path, {"kind": "info", "infoLines": ["a"]}) is None
    assert validation.validate(path, {"kind": "info", "infoLines": 3}) is not None


def test_timestamps_survive_a_round_trip_through_json() -> None:
    stamp = datetime(2026, 1, 2, 3, 4, 5, 500000, tzinfo=UTC)
    data = {"timestamps": {"completedStages": {"tos": stamp}}, "list": [stamp], "n": 1}
    back = firestore_json.from_json(firestore_json.to_json(data))
    assert back == data


def test_the_newest_export_is_imported(tmp_path: Path) -> None:
    assert persistence.import_file(tmp_path) is None
    for age, name in ((100, "firestore_export_2"), (0, "firestore_export_1")):
        folder = tmp_path / name
        folder.mkdir()
        metadata = folder / f"{name}.overall_export_metadata"
        metadata.write_text("x")
        os.utime(metadata, (1_000_000 + age, 1_000_000 + age))
    newest = persistence.import_file(tmp_path)
    assert newest is not None and newest.parent.name == "firestore_export_2"


def test_the_emulators_jvms_compile_with_c1_only_unless_told_otherwise(monkeypatch, tmp_path):
    """Both emulators' commands carry the JVM options (``processes.jvm_options``): C1 only by
    default, ``$DLAB_EMULATOR_JVM_OPTIONS`` instead when set (empty: the JVM's defaults); the
    Pub/Sub emulator's launcher gets them through its own variable, before a user's own."""
    jar = tmp_path / "platform/cloud-firestore-emulator/cloud-firestore-emulator.jar"
    script = tmp_path / "platform/pubsub-emulator/bin/cloud-pubsub-emulator"
    for path in (jar, script):
        path.parent.mkdir(parents=True)
        path.touch()
    monkeypatch.setenv("CLOUDSDK_ROOT_DIR", str(tmp_path))
    monkeypatch.delenv(processes.JVM_OPTIONS_ENV, raising=False)
    monkeypatch.setenv(processes.PUBSUB_OPTIONS_ENV, "-Xmx1g")
    firestore = processes.firestore_command(8080, "127.0.0.1:5001")
    assert firestore[:2] == ["java", "-XX:TieredStopAtLevel=1"]
    pubsub = processes.pubsub_command(8085)
    assert pubsub[:2] == ["env", "CLOUD_PUBSUB_EMULATOR_OPTS=-XX:TieredStopAtLevel=1 -Xmx1g"]
    assert pubsub[2] == str(script)
    monkeypatch.setenv(processes.JVM_OPTIONS_ENV, "-Xss2m '-Dname=a b'")
    assert processes.firestore_command(8080, "x")[1:3] == ["-Xss2m", "-Dname=a b"]
    monkeypatch.setenv(processes.JVM_OPTIONS_ENV, "")
    assert processes.firestore_command(8080, "x")[1] == "-Duser.language=en"
    monkeypatch.delenv(processes.PUBSUB_OPTIONS_ENV)
    assert processes.pubsub_command(8085)[1] == "CLOUD_PUBSUB_EMULATOR_OPTS="
