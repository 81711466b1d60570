"""Where the emulators live: the ports of ``firebase.json`` for people, free ports for tests.

``make up`` uses the same ports as ``firebase emulators:start`` so that clients, scripts and the
console keep one address across restarts; a port already taken falls back to a free one, and the
banner says so (see ``resolve``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from emulator.processes import free_port
from tools.deploy import rulesets

REPO_ROOT = Path(__file__).resolve().parents[1]
FIREBASE_JSON = REPO_ROOT / "firebase.json"
DEFAULT_CONSOLE_PORT = 4001
"""Next to the Emulator UI's 4000, so both can run side by side with ``--attach``."""
PROCESSES_ENV = "DLAB_WORKER_PROCESSES"
"""Worker processes for the commands that run a runtime (``make up``, ``make demo``, ``make
society``, the benchmarks); unset: one per core; 0: the functions on threads of one process."""


def default_processes(env: Mapping[str, str] = os.environ) -> int:
    """``DLAB_WORKER_PROCESSES`` if set, else one per core; 0 on a single core (a worker process
    would only add a hop there)."""
    raw = env.get(PROCESSES_ENV, "").strip()
    if not raw:
        cores = os.cpu_count() or 1
        return cores if cores > 1 else 0
    try:
        return _non_negative(raw)
    except argparse.ArgumentTypeError as error:
        raise ValueError(f"{PROCESSES_ENV}: {error}") from None


def _non_negative(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def add_processes_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--processes N`` of every command that runs a runtime (one definition, one help)."""
    parser.add_argument(
        "--processes",
        type=_non_negative,
        default=default_processes(),
        help=f"worker processes that run the functions (default: ${PROCESSES_ENV}, else one per "
        "core, here %(default)s); 0: threads of one process",
    )


class Ports(BaseModel):
    """0 means "any free port" (what tests use, so parallel sessions never collide)."""

    model_config = ConfigDict(frozen=True)

    firestore: int = 0
    pubsub: int = 0
    functions: int = 0
    """Where the Firestore emulator delivers trigger events (its ``--functions_emulator``)."""
    console: int = 0


class EmulatorOptions(BaseModel):
    """How a runtime gets its emulators: started here (on ``ports``) or already running."""

    model_config = ConfigDict(frozen=True)

    ports: Ports = Ports()
    attach: bool = False
    """Use emulators that are already running on ``ports`` instead of starting them."""
    import_dir: Path | None = None
    """A Firestore export (ours or firebase-tools') loaded when the emulator starts."""
    keep_logs: bool = False
    """Keep the temporary log folder after exit."""


def firebase_ports(path: Path = FIREBASE_JSON) -> Ports:
    """The ``emulators`` ports of firebase.json (firebase-tools' defaults where it names none)."""
    config = json.loads(path.read_text()) if path.exists() else {}
    emulators = config.get("emulators", {})

    def port(name: str, default: int) -> int:
        return int(emulators.get(name, {}).get("port", default))

    return Ports(
        firestore=port("firestore", 8080),
        pubsub=port("pubsub", 8085),
        functions=port("functions", 5001),
        console=DEFAULT_CONSOLE_PORT,
    )


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def resolve(wanted: Ports, keep: tuple[str, ...] = ()) -> tuple[Ports, list[str]]:
    """``wanted`` with every busy or zero port replaced by a free one, and a note per busy one;
    the ports named in ``keep`` are used as they are (someone else's emulators listen there)."""
    chosen: dict[str, int] = {}
    notes: list[str] = []
    for name, port in wanted.model_dump().items():
        if name in keep or (port and port_is_free(port)):
            chosen[name] = port
            continue
        chosen[name] = free_port()
        if port:
            notes.append(f"port {port} ({name}) is taken: using {chosen[name]} instead")
    return Ports(**chosen), notes


def add_up_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``up`` (``make up ARGS="..."``)."""
    parser.add_argument("--project", default="demo-dlab")
    parser.add_argument(
        "--model-override",
        help="run every agent on this apiType ('none': each on its own provider); default: "
        "agents whose provider has no credentials in the environment run on SCRIPTED",
    )
    parser.add_argument("--attach", action="store_true", help="use emulators already running")
    parser.add_argument("--import", dest="import_dir", type=Path, help="load a Firestore export")
    parser.add_argument(
        "--export-on-exit", type=Path, help="export the Firestore data here on exit"
    )
    parser.add_argument("--keep-logs", action="store_true", help="keep the temporary log folder")
    parser.add_argument(
        "--tick", type=float, default=2.0, help="seconds between scheduled ticks (0: none)"
    )
    parser.add_argument(
        "--idle-agent-seconds",
        type=float,
        default=5.0,
        help="the watchdog nudges chat agents quiet for this long (DLAB_IDLE_AGENT_SECONDS)",
    )
    parser.add_argument("--console-port", type=int, help="default 4001 (0: no console)")
    parser.add_argument(
        "--free-ports", action="store_true", help="ignore firebase.json's ports (tests use this)"
    )
    parser.add_argument(
        "--ruleset",
        choices=rulesets.NAMES,
        default="default",
        help="the security rules loaded: default (firestore.rules) or strict "
        "(firestore.strict.rules: participants sign in as themselves); docs/SECURITY.md",
    )
    for service in ATTACHED:
        parser.add_argument(
            f"--{service}-port", type=int, help=f"with --attach: the {service} emulator's port"
        )


ATTACHED = ("firestore", "pubsub", "functions")
