"""``python -m emulator up|emulators|demo``: the backend on the emulators, for people (the tests
use the API).

``up`` runs until Ctrl-C (``emulator.up``), ``emulators`` runs only the emulators for ``up
--attach``, ``demo`` runs ``emulator.demo``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

from emulator.chaos import ChaosSettings
from emulator.config import add_processes_argument, add_up_arguments
from emulator.dispatcher import MODES

_CHAOS_FLAGS = (
    ("--duplicate-rate", "duplicate_rate", "probability that an event is delivered twice"),
    ("--max-delay", "max_delay_s", "seconds each delivery may wait first (reorders them)"),
    ("--fault-rate", "fault_rate", "probability that a model call fails (429, 503, garbled)"),
    ("--lost-ack-rate", "lost_ack_rate", "probability that a retry-enabled success is lost"),
)


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m emulator", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the emulators, the runtime and the console")
    add_up_arguments(up)
    alone = sub.add_parser("emulators", help="only the emulators, for `up --attach`")
    alone.add_argument("--import", dest="import_dir", type=Path, help="load a Firestore export")
    alone.add_argument("-v", "--verbose", action="store_true", help="log more")
    demo = sub.add_parser("demo", help="3 agents through the demo template, live")
    demo.add_argument("--agents", type=int, default=3)
    demo.add_argument("--timeout", type=float, default=180)
    for command in (up, demo):
        command.add_argument("--mode", choices=MODES, default="concurrent")
        add_processes_argument(command)
        command.add_argument("-v", "--verbose", action="store_true", help="log the runtime")
        chaos = command.add_argument_group("chaos (with --mode chaos)")
        defaults = ChaosSettings()
        chaos.add_argument("--seed", type=int, default=defaults.seed)
        for flag, field, help_ in _CHAOS_FLAGS:
            default = getattr(defaults, field)
            chaos.add_argument(flag, dest=field, type=float, default=default, help=help_)
    return parser.parse_args(argv)


def _chaos(args: argparse.Namespace) -> ChaosSettings | None:
    if args.mode != "chaos":
        return None
    try:
        rates = {field: getattr(args, field) for _, field, _ in _CHAOS_FLAGS}
        return ChaosSettings(seed=args.seed, **rates)
    except ValueError as error:
        raise SystemExit(f"python -m emulator: {error}") from None


def _exit_cleanly_on_signals() -> None:
    """Ctrl-C and SIGTERM unwind the ``with`` blocks, so the emulators are stopped."""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # background jobs inherit SIG_IGN
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)  # before the stack is imported: --help and a bad argument answer at once
    from emulator import up as emulator_up
    from emulator.processes import EmulatorStartError
    from emulator.runtime import AttachError

    _exit_cleanly_on_signals()
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.command == "up":
        try:
            return emulator_up.run(args, _chaos(args))
        except (EmulatorStartError, AttachError) as error:  # what to do is in the message
            print(f"python -m emulator up: {error}", file=sys.stderr)
            return 1
    if args.command == "emulators":
        return emulator_up.emulators_only(args)
    from emulator import demo

    chaos = _chaos(args)
    return demo.run(
        agents=args.agents,
        mode=args.mode,
        timeout=args.timeout,
        chaos=chaos,
        processes=args.processes,
    )


if __name__ == "__main__":
    sys.exit(main())
