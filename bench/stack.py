"""The local stack for the benchmark: shared emulators, runtimes, environment, clocks and CPU.

The emulators are started once and kept for the whole run (each section gets its own runtime and
project, so their triggers, data and topics never mix); CPU time is read per process from /proc so
each section can say whether Python or an emulator JVM was the busy one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import platform
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.rtt_proxy import RttProxy
from emulator import services
from emulator.runtime import LocalRuntime

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_STARTED = time.monotonic()


def say(message: str) -> None:
    """A progress line: elapsed seconds since the benchmark started, then the message."""
    print(f"[{time.monotonic() - _STARTED:7.1f}s] {message}", flush=True)


# --- statistics -----------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def dist(values: list[float], digits: int = 2) -> dict[str, Any]:
    """n, p50, p95, mean, max of a sample (milliseconds or seconds, as given)."""

    def r(x: float | None) -> float | None:
        return None if x is None else round(x, digits)

    return {
        "n": len(values),
        "p50": r(percentile(values, 50)),
        "p95": r(percentile(values, 95)),
        "mean": r(statistics.fmean(values)) if values else None,
        "max": r(max(values)) if values else None,
    }


def epoch(value: Any) -> float | None:
    """Epoch seconds of a Firestore timestamp (datetime) or None."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.timestamp()
    return float(value)


# --- environment ----------------------------------------------------------------------------


@contextlib.contextmanager
def env(**values: str | None) -> Iterator[None]:
    """Set (or, with None, unset) environment variables for the block; the functions read them
    at each call (model override, provider URL)."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# --- CPU per process ------------------------------------------------------------------------


def _cpu_seconds(pid: int | str) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # utime + stime


def _children(parent: int) -> list[int]:
    """Processes whose parent is ``parent`` (the runtime's worker processes, the emulators'
    wrappers)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            out.append(int(entry.name))
    return out


def _emulator_pids(port: int) -> list[int]:
    """Processes (the JVMs and their wrappers) whose command line names this port."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"--port {port}" in cmdline or f"--port={port}" in cmdline:
            pids.append(int(entry.name))
    return pids


@dataclasses.dataclass
class CpuMeter:
    """CPU seconds used during a block by this Python process, by its worker processes (the
    runtime's ``processes``; its other children that are not emulators) and by each emulator.

    Counted per process, so a worker that started or ended within the block counts what it used
    while it was seen (one that ended between two readings loses its last stretch)."""

    firestore_port: int
    pubsub_port: int
    _start: dict[str, dict[int, float]] = dataclasses.field(default_factory=dict)
    _seen: dict[str, dict[int, float]] = dataclasses.field(default_factory=dict)
    _wall: float = 0.0

    def _now(self) -> dict[str, dict[int, float]]:
        firestore = _emulator_pids(self.firestore_port)
        pubsub = _emulator_pids(self.pubsub_port)
        workers = [p for p in _children(os.getpid()) if p not in firestore + pubsub]
        return {
            role: {pid: _cpu_seconds(pid) for pid in pids}
            for role, pids in (
                ("python", [os.getpid()]),
                ("firestoreEmulator", firestore),
                ("pubsubEmulator", pubsub),
                ("workerProcesses", workers),
            )
        }

    def start(self) -> CpuMeter:
        self._start, self._wall = self._now(), time.monotonic()
        self._seen = {}
        return self

    def sample(self) -> None:
        """Read every process now, so that those gone by ``stop`` (worker processes stop with
        their runtime) still count what they used until here."""
        for role, pids in self._now().items():
            self._seen.setdefault(role, {}).update(pids)

    def stop(self) -> dict[str, Any]:
        """CPU seconds per process and as a share of the machine (cores x wall time)."""
        now, wall = self._now(), time.monotonic() - self._wall
        end = {role: self._seen.get(role, {}) | pids for role, pids in now.items()}
        used = {
            role: round(
                sum(t - self._start.get(role, {}).get(pid, 0.0) for pid, t in pids.items()), 2
            )
            for role, pids in end.items()
        }
        capacity = wall * (os.cpu_count() or 1)
        return {
            "wallSeconds": round(wall, 2),
            "cpuSeconds": used,
            "machineShare": {k: round(v / capacity, 3) for k, v in used.items()} if wall else {},
        }


# --- the stack ------------------------------------------------------------------------------


class DelayedRuntime(LocalRuntime):
    """A runtime whose functions reach the emulators through ``hosts`` (an ``RttProxy``).

    Only what the runtime hands its functions changes (the emulator hosts of their environment,
    in this process and in its worker processes): the emulators' trigger deliveries to the
    runtime, its Pub/Sub subscriber and its admin calls stay direct, as the platform's
    delivery is not the functions' own round trip. Clients this process creates from its
    environment meanwhile (the benchmark's own reads and writes, the idle barrier) go through
    the proxy too; none of them is on a measured path."""

    def __init__(self, hosts: dict[str, str], **options: Any) -> None:
        super().__init__(**options)
        self._hosts = hosts

    @property
    def env(self) -> dict[str, str]:
        base = super().env
        return base | {
            name: self._hosts.get(base[name], base[name])
            for name in ("FIRESTORE_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST")
        }


class Stack:
    """The shared emulators, held for the whole benchmark; one runtime per measurement.

    ``rtt_ms``: None, the functions reach the emulators directly; a number, through a proxy
    adding that round-trip time to each of their calls (``bench.rtt_proxy``; 0 keeps the proxy
    with no delay, the baseline a delay is compared with). ``set_rtt`` changes it between
    runtimes."""

    def __init__(self, rtt_ms: float | None = None) -> None:
        self._services: services.Services | None = None
        self._runtimes = 0
        self.startup_seconds = 0.0
        self.rtt_ms = rtt_ms
        self._proxy: RttProxy | None = None

    def __enter__(self) -> Stack:
        t0 = time.monotonic()
        self._services = services.acquire()
        if self.rtt_ms is not None:
            hosts = (self._services.firestore.host, self._services.pubsub.host)
            try:
                self._proxy = RttProxy(hosts, self.rtt_ms).__enter__()
            except BaseException:
                self.__exit__()
                raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proxy is not None:
            self._proxy.__exit__()
            self._proxy = None
        if self._services is not None:
            services.release(self._services)
            self._services = None

    def set_rtt(self, rtt_ms: float) -> None:
        """The round-trip time added from now on (a stack started with an ``rtt_ms``)."""
        if self._proxy is None:
            raise RuntimeError("this stack has no RTT proxy (start it with rtt_ms=0 or more)")
        self._proxy.set_rtt(rtt_ms)
        self.rtt_ms = rtt_ms

    @property
    def services(self) -> services.Services:
        assert self._services is not None, "the stack is not started"
        return self._services

    def runtime(self, name: str, **options: Any) -> LocalRuntime:
        """A runtime on a project of its own (``bench-{name}-{n}``); start it with ``with``.

        Never reuse a project: a second runtime on a project whose earlier runtime stopped gets
        some Pub/Sub messages only after the 60 s ack deadline (the emulator still serves the
        closed subscriber's stream)."""
        self._runtimes += 1
        project = f"bench-{name}-{self._runtimes}"
        if self._proxy is not None:
            return DelayedRuntime(self._proxy.hosts, project=project, **options)
        return LocalRuntime(project=project, **options)

    def cpu(self) -> CpuMeter:
        return CpuMeter(self.services.firestore.port, self.services.pubsub.port).start()


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_gib = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        first = Path("/proc/meminfo").read_text().splitlines()[0]
        mem_gib = round(int(first.split()[1]) / 1024**2, 1)
    load = None
    with contextlib.suppress(OSError):
        load = [round(x, 2) for x in os.getloadavg()]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memoryGiB": mem_gib,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "loadAverageAtStart": load,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
