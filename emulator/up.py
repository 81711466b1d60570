"""``make up``: the emulators, the runtime, the console and a compact live log until Ctrl-C.

Also ``python -m emulator emulators``: only the emulators, on the same fixed ports, delivering
trigger events to the port ``make up --attach`` listens on, so the backend can be restarted (after
a code change) while the data and any connected client stay.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

from google.api_core.exceptions import GoogleAPICallError
from google.cloud import firestore

from emulator import config, livelog, model_choice, persistence, processes
from emulator.chaos import ChaosSettings
from emulator.runtime import LocalRuntime
from functions.registry import REGISTRY, ScheduleTrigger
from tools.deploy import rulesets

REPO_ROOT = Path(__file__).resolve().parents[1]
API_PORT = 5002
"""Where the HTTP functions answer (the REST API at /api/v1), beside firebase-tools' 5001;
a free one when it is taken (the banner prints the URL)."""
POLL_S = 0.5
LAST_POLL_S = 5.0
"""How long the live log's last reads after Ctrl-C may take: ``Stopping ...`` is said first, and
a Firestore emulator that does not answer (stalled under load) held it up for the client's
default 300 s (``make up did not stop within 60 s of Ctrl-C``, "Stopping ..." never printed)."""


"""The ports an attached backend must share with the emulators it attaches to."""


def attach_command(ports: config.Ports) -> str:
    """How to attach the backend to emulators on ``ports``: the port options are spelled out
    when any differs from firebase.json's, which is what a bare ``--attach`` would use."""
    usual = config.firebase_ports()
    moved = [s for s in config.ATTACHED if getattr(ports, s) != getattr(usual, s)]
    extra = "".join(f" --{s}-port {getattr(ports, s)}" for s in config.ATTACHED) if moved else ""
    return f'make up ARGS="--attach{extra}"' if extra else "make up ARGS=--attach"


def emulator_options(args: argparse.Namespace) -> tuple[config.EmulatorOptions, list[str]]:
    """firebase.json's ports (busy ones replaced, unless attaching: then they must be used)."""
    if args.attach and args.import_dir:
        raise SystemExit(
            "python -m emulator up: --import loads data into emulators started here; with "
            "--attach, give it to the emulators (python -m emulator emulators --import DIR)"
        )
    wanted = config.Ports() if args.free_ports else config.firebase_ports()
    given = {s: getattr(args, f"{s}_port", None) for s in config.ATTACHED}
    if any(given.values()) and not args.attach:
        raise SystemExit("python -m emulator up: --firestore-port and the like go with --attach")
    wanted = wanted.model_copy(update={s: port for s, port in given.items() if port})
    if args.console_port:
        wanted = wanted.model_copy(update={"console": args.console_port})
    # attached: the emulators listen where they listen, and deliver to the functions port
    keep = ("firestore", "pubsub", "functions") if args.attach else ()
    ports, notes = config.resolve(wanted, keep)
    if args.console_port == 0:
        ports = ports.model_copy(update={"console": 0})
    if args.free_ports and not args.attach:  # chosen as they start: one taken meanwhile moves
        ports = ports.model_copy(update={"firestore": 0, "pubsub": 0})
    options = config.EmulatorOptions(
        ports=ports, attach=args.attach, import_dir=args.import_dir, keep_logs=args.keep_logs
    )
    return options, notes


def _scheduled() -> str:
    return ", ".join(s.name for s in REGISTRY if isinstance(s.trigger, ScheduleTrigger))


def banner(
    runtime: LocalRuntime,
    args: argparse.Namespace,
    override: str | None,
    console_url: str | None,
    notes: list[str],
    agents: list[str],
) -> str:
    env = " ".join(f"{k}={v}" for k, v in runtime.env.items())
    services = runtime.running_services
    ticks = f"every {args.tick:g} s" if args.tick else "off (--tick 0)"
    ticks += f", quiet chat agents nudged after {os.environ.get('DLAB_IDLE_AGENT_SECONDS')} s"
    logs = services.log_dir / "deliveries.log"
    kept = "kept" if args.keep_logs or not services.temporary_logs else "removed on exit"
    lines = [
        f"Backend up: {runtime.mode} delivery. "
        + (
            "Ctrl-C stops the backend (attached: the emulators keep running)."
            if args.attach
            else "Ctrl-C stops everything."
        ),
        f"  Firestore   {runtime.firestore_host}   Pub/Sub {runtime.pubsub_host}   "
        f"project {runtime.project}",
        f"  functions   {len(REGISTRY)} (trigger events to {services.receiver.host}); "
        f"scheduled ({_scheduled()}) ticked {ticks}; "
        f"{runtime.processes or 'no'} worker processes (--processes)",
        f"  models      {model_choice.describe(override)}",
        *agents,
        f"  console     {console_url or 'off'}",
        f"  REST API    {runtime.http_url('api')}/v1 (a key: .venv/bin/python -m tools.auth "
        "api-key EMAIL; docs/API.md)",
        f"  load        export {env}",
        "              .venv/bin/python -m tools.load_template "
        "templates/demo_all_stages.json --agents 3",
        f"  full log    {logs} ({kept})",
        f"  cost        Firestore usage per invocation in {os.environ.get('DLAB_USAGE_LOG')}: "
        ".venv/bin/python -m tools.usage_report FILE",
    ]
    if args.import_dir:
        found = persistence.import_file(args.import_dir)
        lines.append(
            f"  imported    {found.parent}"
            if found
            else f"  import      no export in {args.import_dir} yet: started empty"
        )
    if args.export_on_exit:
        lines.append(f"  export      to {args.export_on_exit} on exit")
    if runtime.chaos_settings is not None and runtime.chaos_run is not None:
        lines.append(f"  chaos       {runtime.chaos_settings.describe()}")
    lines += [f"  note        {note}" for note in notes]
    lines.append("Live log (agent moves, chat messages, errors; --verbose adds every delivery):")
    return "\n".join(lines)


def _agents(db: firestore.Client, override: str | None) -> list[str]:
    """Which model each agent already in the database uses (after an import)."""
    lines = []
    for snap in db.collection_group("participants").stream():
        settings = ((snap.to_dict() or {}).get("agentConfig") or {}).get("modelSettings")
        if settings is None:
            continue
        api = str(settings.get("apiType") or "GEMINI")
        runs = model_choice.runs_on(api, override)
        lines.append(
            f"  agent       {snap.id[:8]}: {api} {settings.get('modelName') or ''} → {runs}"
        )
    return lines


def _watch(runtime: LocalRuntime, feed: livelog.LiveLog, log_file: TextIO, verbose: bool) -> None:
    shown = said = 0
    while True:
        records = runtime.deliveries
        feed.deliveries(records[shown:], log_file, verbose)
        shown = len(records)
        notices = runtime.notices
        for notice in notices[said:]:
            feed.notice(notice)
        said = len(notices)
        with contextlib.suppress(GoogleAPICallError):  # the emulator restarting: said above
            feed.poll()
        time.sleep(POLL_S)


def run(args: argparse.Namespace, chaos: ChaosSettings | None = None) -> int:
    options, notes = emulator_options(args)
    override = model_choice.override(args.model_override, os.environ)
    if override:
        os.environ["DLAB_MODEL_OVERRIDE"] = override
    os.environ.setdefault("DLAB_IDLE_AGENT_SECONDS", f"{args.idle_agent_seconds:g}")
    rules = None if args.attach else rulesets.path(args.ruleset)
    print("Starting the emulators and the runtime ...", flush=True)
    runtime = LocalRuntime(
        project=args.project,
        mode=args.mode,
        rules=rules,
        chaos=chaos,
        tick_s=args.tick or None,
        emulators=options,
        processes=args.processes,
        http_port=API_PORT if config.port_is_free(API_PORT) else 0,
    )
    with runtime, contextlib.ExitStack() as stack:
        usage_log = runtime.running_services.log_dir / "usage.log"
        os.environ.setdefault("DLAB_USAGE_LOG", str(usage_log))
        console_url = _start_console(stack, runtime, options.ports.console)
        db = firestore.Client(project=runtime.project)
        agents = _agents(db, override)
        print(banner(runtime, args, override, console_url, notes, agents), flush=True)
        log_file = stack.enter_context(livelog.open_log(runtime.running_services.log_dir))
        feed = livelog.LiveLog(db, override)
        try:
            with contextlib.suppress(GoogleAPICallError):  # then the first poll shows it all
                feed.prime()
            _watch(runtime, feed, log_file, args.verbose)
        except (KeyboardInterrupt, SystemExit):
            print("\nStopping ...", flush=True)  # at once, whatever the last poll takes
            with contextlib.suppress(Exception):
                feed.poll(LAST_POLL_S)  # the last moves before Ctrl-C
        finally:
            _export(runtime, args.export_on_exit)
    return 0


def _start_console(stack: contextlib.ExitStack, runtime: LocalRuntime, port: int) -> str | None:
    if not port:
        return None
    from console.server import ConsoleServer

    server = stack.enter_context(ConsoleServer(runtime.project, port))
    return server.url


def _export(runtime: LocalRuntime, directory: Path | None) -> None:
    if directory is None:
        return
    try:
        path = runtime.export(directory)
    except Exception as error:  # the data is lost: say so loudly, still stop cleanly
        print(f"EXPORT FAILED ({directory}): {error}", file=sys.stderr, flush=True)
        return
    print(f"Exported the Firestore data to {path.parent}", flush=True)


def emulators_only(args: argparse.Namespace) -> int:
    """Run the emulators alone (``make up ARGS=--attach`` then runs the backend against them)."""
    ports, notes = config.resolve(config.firebase_ports())
    log_dir = Path(tempfile.gettempdir()) / "dlab-emulators-standalone"
    seed = persistence.import_file(args.import_dir) if args.import_dir else None
    functions_host = f"127.0.0.1:{ports.functions}"
    emulators = processes.emulator_pair(
        ports.firestore, ports.pubsub, functions_host, log_dir, seed
    )
    try:
        processes.start_together(emulators)
        print(
            f"Emulators up: Firestore 127.0.0.1:{ports.firestore} (trigger events to "
            f"{functions_host}), Pub/Sub 127.0.0.1:{ports.pubsub}; logs in {log_dir} "
            "(removed on exit).\n"
            f"Run the backend against them with: {attach_command(ports)}   (Ctrl-C stops them)",
            flush=True,
        )
        for note in notes:
            print(f"  note: {note}")
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        return 0
    finally:
        for emulator in emulators:
            emulator.stop()
        shutil.rmtree(log_dir, ignore_errors=True)
