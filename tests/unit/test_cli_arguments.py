"""The command-line tools against bad arguments (issue 40 rows 11 and 13): one line on stderr
and exit code 2 for each, before anything is read or written; no traceback; an API type without
its credentials is an error, never a silent switch to the scripted model; counts are bounded."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from functions import clients
from tools import auth, export, personas

Main = Callable[[list[str]], int]


@pytest.fixture(autouse=True)
def _environment_kept(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A command sets the process's project (and model override) for the functions' clients, as
    a command's own process should; here the process is a test worker that runs the functions
    for later tests: the variables are put back and the clients made for them forgotten."""
    for name in ("GOOGLE_CLOUD_PROJECT", "DLAB_MODEL_OVERRIDE"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    yield
    clients.reset()


def _exit_code(main: Main, argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as leaving:
        return int(leaving.code or 0)


def refused(main: Main, argv: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> str:
    assert _exit_code(main, argv) == 2, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert all(word in err for word in words), err
    return err


@pytest.mark.parametrize("bad", ["", "..", "a/b", "__x__", "x" * 1600])
def test_export_refuses_an_id_that_names_no_document(
    bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ["--out", str(tmp_path), "--project", "p"]
    refused(export.main, [bad, *out], capsys, "python -m tools.export: error:", "document id")
    refused(export.main, ["--conversation", bad, *out], capsys, "--conversation")


def test_export_refuses_an_unusable_out_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("")
    refused(export.main, ["e1", "--out", str(a_file / "x"), "--project", "p"], capsys, "--out")
    refused(export.main, ["e1", "--out", str(a_file), "--project", "p"], capsys, "--out")


@pytest.mark.parametrize("bad", ["", "not-an-email", "a@b", "a b@c.org", "x/y@z.org"])
def test_an_api_key_needs_an_email(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    refused(auth.main, ["--project", "p", "api-key", bad], capsys, "not an email address")


def test_auth_refuses_bad_ids_and_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    refused(auth.main, ["--project", "p", "participant", "e1", "a/b"], capsys, "document id")
    refused(auth.main, ["--project", "p", "player", "s1", "two"], capsys, "invalid int value")
    refused(auth.main, ["--project", "p", "experimenter", "nobody"], capsys, "email")


def test_personas_bounds_its_counts_and_checks_its_ids(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = ["--out", str(tmp_path / "p.json")]
    generate = ["--project", "p", "generate"]
    refused(personas.main, [*generate, "--n", "100000", *out], capsys, "not from 1 to 1000")
    refused(personas.main, [*generate, "--n", "0", *out], capsys, "not from 1 to 1000")
    refused(personas.main, [*generate, "--n", "many", *out], capsys, "not a whole number")
    refused(personas.main, [*generate, "--n", "2", "--start", "-1", *out], capsys, "--start")
    refused(personas.main, [*generate, "--n", "2", "--experiment", ".."], capsys, "document id")
    add = ["--project", "p", "add-agents", "--experiment", "e", "--cohort"]
    refused(personas.main, [*add, "a/b"], capsys, "--cohort")


def test_an_api_type_without_its_key_is_an_error_not_the_scripted_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")  # nothing is reached
    for name in ("DLAB_MODEL_OVERRIDE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    argv = ["--project", "p", "generate", "--n", "2", "--out", str(tmp_path / "p.json")]
    refused(
        personas.main,
        [*argv, "--api-type", "OPENAI"],
        capsys,
        "--api-type OPENAI has no credentials here (set OPENAI_API_KEY or OPENAI_BASE_URL)",
        "--api-type SCRIPTED",
    )
    refused(personas.main, argv, capsys, "--api-type GEMINI has no credentials")
    assert not (tmp_path / "p.json").exists()
