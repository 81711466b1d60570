"""Emulator child processes: free ports, process groups, readiness, and a stop that always works."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 30.0
PORT_MOVES = 3
"""How often an emulator on a port chosen here moves to another one that was free a moment ago
(the choice and the emulator's bind are seconds apart: another process may bind it first)."""
_PR_SET_PDEATHSIG = 1
JVM_OPTIONS_ENV = "DLAB_EMULATOR_JVM_OPTIONS"
PUBSUB_OPTIONS_ENV = "CLOUD_PUBSUB_EMULATOR_OPTS"
"""What the Pub/Sub emulator's launcher script passes to its JVM."""
DEFAULT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
"""The emulators' JVMs compile with C1 only. With both compilers, the C2 compiler thread was a
fifth to a third of a core through a whole stress chat (Java Flight Recorder), the Firestore
emulator used 180-290 ms of CPU per chat message, and the two emulators outran the functions
for the machine's two cores. C1 alone: 63-123 ms, and the reply overhead fell by a quarter
(``bench/RESULTS.md``). Local runs are minutes long; C2's faster code would pay for its
compiling only in far longer ones."""


class EmulatorStartError(RuntimeError):
    pass


class PortTaken(EmulatorStartError):
    """The emulator's port was bound by another process: a port asked for by number, or one
    chosen here that was taken again after every move."""


def free_port() -> int:
    """A loopback port nobody listens on right now (the OS picks it; tiny reuse race accepted)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sdk_root() -> Path:
    """The Cloud SDK root: $CLOUDSDK_ROOT_DIR, else asked from gcloud, else the Debian default."""
    if root := os.environ.get("CLOUDSDK_ROOT_DIR"):
        return Path(root)
    gcloud = shutil.which("gcloud")
    if gcloud:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [gcloud, "info", "--format=value(installation.sdk_root)"],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            ).stdout.strip()
            if out:
                return Path(out)
    return Path("/usr/lib/google-cloud-sdk")


def jvm_options(env: Mapping[str, str] = os.environ) -> list[str]:
    """The emulators' JVM options: ``$DLAB_EMULATOR_JVM_OPTIONS`` if set (empty: the JVM's
    defaults), else ``DEFAULT_JVM_OPTIONS``."""
    return shlex.split(env.get(JVM_OPTIONS_ENV, DEFAULT_JVM_OPTIONS))


def firestore_command(port: int, functions_host: str, import_file: Path | None = None) -> list[str]:
    # The jar, not the wrapper script: the script does not exec java, and gcloud rejects
    # --functions_emulator. No --single_project_mode: runtimes use one project id each.
    jar = sdk_root() / "platform/cloud-firestore-emulator/cloud-firestore-emulator.jar"
    if not jar.exists():
        raise EmulatorStartError(f"Firestore emulator jar not found at {jar}")
    return [
        "java",
        *jvm_options(),
        "-Duser.language=en",
        "-cp",
        str(jar),
        "com.google.cloud.datastore.emulator.firestore.CloudFirestore",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--functions_emulator",
        functions_host,
        *(["--import-data", str(import_file)] if import_file else []),
    ]


def pubsub_command(port: int) -> list[str]:
    script = sdk_root() / "platform/pubsub-emulator/bin/cloud-pubsub-emulator"
    if not script.exists():
        raise EmulatorStartError(f"Pub/Sub emulator not found at {script}")
    # its launcher script passes $CLOUD_PUBSUB_EMULATOR_OPTS to the JVM (a user's own, last, win)
    options = " ".join([*map(shlex.quote, jvm_options()), os.environ.get(PUBSUB_OPTIONS_ENV, "")])
    return [
        "env",
        f"{PUBSUB_OPTIONS_ENV}={options.strip()}",
        str(script),
        "--host=127.0.0.1",
        f"--port={port}",
    ]


def emulator_pair(
    firestore_port: int,
    pubsub_port: int,
    functions_host: str,
    log_dir: Path,
    seed: Path | None = None,
) -> tuple[EmulatorProcess, EmulatorProcess]:
    """The Firestore emulator, delivering trigger events to ``functions_host`` (and loading
    ``seed``), and the Pub/Sub emulator, logging in ``log_dir``; a port 0 is chosen as they
    start (``EmulatorProcess``)."""
    return (
        EmulatorProcess(
            "firestore-emulator",
            lambda port: firestore_command(port, functions_host, seed),
            firestore_port,
            log_dir / "firestore.log",
        ),
        EmulatorProcess("pubsub-emulator", pubsub_command, pubsub_port, log_dir / "pubsub.log"),
    )


def start_together(emulators: Sequence[EmulatorProcess | RunningEmulator]) -> None:
    """Start every emulator, then wait for each: their JVMs start side by side. The caller
    stops them if this raises."""
    for emulator in emulators:
        emulator.start()
    for emulator in emulators:
        emulator.wait_ready()


def _die_with_parent() -> None:
    """Linux: SIGTERM the child if this process dies without running its cleanup (kill -9)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def answers_ok(host: str) -> bool:
    """True when an emulator answers GET / with "Ok" (both emulators do once ready)."""
    try:
        with urllib.request.urlopen(f"http://{host}/", timeout=1) as response:
            return response.read().strip() == b"Ok"
    except OSError:
        return False


class RunningEmulator:
    """An emulator someone else started (``--attach``): checked, never started or stopped."""

    def __init__(self, name: str, port: int) -> None:
        self.name = name
        self.port = port

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        pass

    def wait_ready(self, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while not answers_ok(self.host):
            if time.monotonic() > deadline:
                raise EmulatorStartError(
                    f"--attach: no {self.name} answers on {self.host}; start it first "
                    "(`python -m emulator emulators`, or `firebase emulators:start`)"
                )
            time.sleep(0.2)

    def exit_code(self) -> int | None:
        """Never known: someone else runs it (a restart shows in its data, ``emulator.health``)."""
        return None

    def stop(self) -> None:
        pass


class EmulatorProcess:
    """One emulator in its own process group, so stopping it also stops whatever it forked."""

    def __init__(
        self, name: str, command: Callable[[int], list[str]], port: int, log_path: Path
    ) -> None:
        """``command`` gives the command line for a port. ``port`` 0 is a free port chosen here,
        chosen again if another process binds it before the emulator does, at the first start
        only: a restart stays on the port its clients know."""
        self.name = name
        self.command = command
        self.port = port or free_port()
        self.log_path = log_path
        self._moves_left = 0 if port else PORT_MOVES
        self._log_from = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # PDEATHSIG fires when the forking *thread* ends, so only use it from the main thread.
        in_main = threading.current_thread() is threading.main_thread()
        with open(self.log_path, "ab") as out:
            self._log_from = out.tell()
            self._proc = subprocess.Popen(
                self.command(self.port),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if in_main else None,
            )
        log.debug("%s started (pid %s) on port %s", self.name, self._proc.pid, self.port)

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Poll GET / until it answers "Ok"; fail fast with the log tail if the process died."""
        deadline = time.monotonic() + timeout
        while True:
            if self._port_taken():
                self._start_on_another_port()
                deadline = time.monotonic() + timeout
                continue
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise EmulatorStartError(f"{self.name} exited ({code}):\n{self.log_tail()}")
            if answers_ok(self.host):
                self._moves_left = 0
                return
            if time.monotonic() > deadline:
                self.stop()
                why = f"{self.name} not ready on {self.host} after {timeout:.0f} s"
                raise EmulatorStartError(f"{why}:\n{self.log_tail()}")
            time.sleep(0.1)

    def _port_taken(self) -> bool:
        """The emulator could not bind its port (both emulators log a BindException; the
        Pub/Sub one then hangs instead of exiting)."""
        try:
            with open(self.log_path, "rb") as log_file:
                log_file.seek(self._log_from)
                return b"java.net.BindException" in log_file.read()
        except OSError:
            return False

    def _start_on_another_port(self) -> None:
        taken = self.port
        self.stop()
        if not self._moves_left:
            raise PortTaken(f"{self.name}: port {taken} is taken by another process")
        self._moves_left -= 1
        self.port = free_port()
        log.info(
            "%s: port %s was taken before it bound it: starting on %s", self.name, taken, self.port
        )
        self.start()

    @property
    def pid(self) -> int | None:
        """The process (its group's leader), while started here."""
        return None if self._proc is None else self._proc.pid

    def exit_code(self) -> int | None:
        """The exit code if the process ended by itself (a crash, a kill from outside), else
        None: running, or stopped here."""
        return None if self._proc is None else self._proc.poll()

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace`` seconds."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        log.debug("%s stopped", self.name)
