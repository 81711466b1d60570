"""Emulators moved to free ports are attached to on those ports, never on firebase.json's."""

from __future__ import annotations

import argparse

import pytest

from emulator import config
from emulator import up as emulator_up


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    config.add_up_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_printed_command_names_the_ports_the_emulators_moved_to():
    usual = config.firebase_ports()
    assert emulator_up.attach_command(usual) == "make up ARGS=--attach"
    moved = usual.model_copy(update={"firestore": 18080})
    command = emulator_up.attach_command(moved)
    expected = f"--firestore-port 18080 --pubsub-port {usual.pubsub}"
    assert expected in command and f"--functions-port {usual.functions}" in command


def test_attach_uses_the_ports_given_and_refuses_them_without_attach():
    usual = config.firebase_ports()
    args = _args("--attach", "--firestore-port", "18080", "--pubsub-port", "18085")
    options, _ = emulator_up.emulator_options(args)
    assert (options.ports.firestore, options.ports.pubsub) == (18080, 18085)
    assert options.ports.functions == usual.functions
    with pytest.raises(SystemExit, match="go with --attach"):
        emulator_up.emulator_options(_args("--firestore-port", "18080"))


def test_free_ports_leave_the_emulators_to_choose_theirs_as_they_start():
    """A port chosen seconds before its emulator binds it may be taken meanwhile: with
    ``--free-ports`` the emulators choose theirs (and move if so); firebase.json's are kept."""
    options, _ = emulator_up.emulator_options(_args("--free-ports"))
    assert (options.ports.firestore, options.ports.pubsub) == (0, 0)
    assert options.ports.functions != 0
    usual, _ = emulator_up.emulator_options(_args())
    assert usual.ports.firestore != 0 and usual.ports.pubsub != 0
