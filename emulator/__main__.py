"""``python -m emulator up|demo``: the backend on the emulators, for people (the tests use the API).

``up`` runs until Ctrl-C and prints each delivery; ``demo`` runs ``emulator.demo``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from pathlib import Path

from emulator.chaos import ChaosSettings
from emulator.dispatcher import MODES

REPO_ROOT = Path(__file__).resolve().parents[1]
RULES = REPO_ROOT / "firestore.rules"
_KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


_CHAOS_FLAGS = (
    ("--duplicate-rate", "duplicate_rate", "probability that an event is delivered twice"),
    ("--max-delay", "max_delay_s", "seconds each delivery may wait first (reorders them)"),
    ("--fault-rate", "fault_rate", "probability that a model call fails (429, 503, garbled)"),
    ("--lost-ack-rate", "lost_ack_rate", "probability that a retry-enabled success is lost"),
)


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m emulator", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the emulators and the runtime until Ctrl-C")
    up.add_argument("--project", default="demo-dlab")
    up.add_argument(
        "--model-override",
        help="run every agent on this apiType (default: SCRIPTED unless a provider key is set; "
        "'none' to disable)",
    )
    demo = sub.add_parser("demo", help="3 agents through the demo template, live")
    demo.add_argument("--agents", type=int, default=3)
    demo.add_argument("--timeout", type=float, default=180)
    for command in (up, demo):
        command.add_argument("--mode", choices=MODES, default="concurrent")
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


def _model_override(requested: str | None) -> str | None:
    """SCRIPTED unless asked otherwise or a real provider is both available and keyed."""
    from shared.llm.providers import MODEL_OVERRIDE_ENV, registered

    if requested:
        return None if requested.lower() == "none" else requested
    if os.environ.get(MODEL_OVERRIDE_ENV):
        return os.environ[MODEL_OVERRIDE_ENV]
    real_providers = registered() - {"SCRIPTED"}
    if real_providers and any(os.environ.get(k) for k in _KEY_VARS):
        return None
    return "SCRIPTED"


def up(args: argparse.Namespace) -> int:
    from emulator.runtime import LocalRuntime
    from shared.llm.providers import MODEL_OVERRIDE_ENV

    override = _model_override(args.model_override)
    if override:
        os.environ[MODEL_OVERRIDE_ENV] = override
    rules = RULES if RULES.exists() else None
    print("Starting the emulators and the runtime ...", flush=True)
    chaos = _chaos(args)
    with LocalRuntime(project=args.project, mode=args.mode, rules=rules, chaos=chaos) as runtime:
        exports = " ".join(f"{k}={v}" for k, v in runtime.env.items())
        print(f"Ready ({args.mode} delivery, agents on {override or 'their own models'}):")
        if chaos is not None:
            print(f"  chaos: {chaos.describe()}")
        print(f"  export {exports}")
        print("Ctrl-C stops everything.\n", flush=True)
        shown = 0
        try:
            while True:
                records = runtime.deliveries
                for record in records[shown:]:
                    error = record.error.strip().splitlines()[-1] if record.error else ""
                    print(
                        f"{record.outcome:22} {record.function:22} {record.subject} "
                        f"({record.duration_ms:.0f} ms) {error}",
                        flush=True,
                    )
                shown = len(records)
                time.sleep(0.2)
        except (KeyboardInterrupt, SystemExit):
            print("\nStopping ...", flush=True)
    return 0


def _exit_cleanly_on_signals() -> None:
    """Ctrl-C and SIGTERM unwind the ``with`` blocks, so the emulators are stopped."""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # background jobs inherit SIG_IGN
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    _exit_cleanly_on_signals()
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.command == "up":
        return up(args)
    from emulator import demo

    chaos = _chaos(args)
    return demo.run(agents=args.agents, mode=args.mode, timeout=args.timeout, chaos=chaos)


if __name__ == "__main__":
    sys.exit(main())
