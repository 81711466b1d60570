"""Where the time goes: per-function delivery times, RPCs per function, and a stack sampler.

cProfile cannot follow the runtime's worker threads, so cheap instruments stand in for it,
installed only around the run being profiled:

- ``RpcCounter`` counts every Google API call (Firestore, Pub/Sub) made through the generated
  clients, attributed to the function being delivered on that thread (by wrapping the invoker;
  Pub/Sub publishes run on the publisher's own thread, so they count as outside functions);
- ``StackSampler`` samples the delivery threads' stacks every few milliseconds and attributes
  each busy sample to the library at the top of the stack and to the innermost frame of this
  repository's code, i.e. wall time by what the workers were doing (waiting included);
- ``CpuProfiler`` samples the same threads' stacks with each thread's CPU clock, i.e. where the
  Python CPU time goes (the GIL makes the process one core at most).
"""

from __future__ import annotations

import collections
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import google.api_core.gapic_v1.method as gapic_method

import emulator.invoker
from bench.stack import dist
from emulator.delivery import DeliveryRecord

REPO = str(Path(__file__).resolve().parents[1]) + "/"
_FUNCTION_CODE = ("functions/", "shared/")
"""The code a delivery runs; the stack sampler attributes time to its innermost frame."""


def delivery_profile(records: Iterable[DeliveryRecord]) -> dict[str, Any]:
    """Per function: deliveries, failures, total and typical time running and waiting."""
    by_function: dict[str, list[DeliveryRecord]] = collections.defaultdict(list)
    for r in records:
        by_function[r.function].append(r)
    out: dict[str, Any] = {}
    for function, rs in sorted(
        by_function.items(), key=lambda kv: -sum(r.duration_ms for r in kv[1])
    ):
        ran = [r for r in rs if not r.dropped]
        out[function] = {
            "deliveries": len(ran),
            "dropped": len(rs) - len(ran),
            "errors": sum(r.outcome == "error" for r in ran),
            "totalSeconds": round(sum(r.duration_ms for r in ran) / 1000, 2),
            "durationMs": dist([r.duration_ms for r in ran], 1),
            "queuedMs": dist([r.queued_ms for r in ran], 1),
            "errorSamples": _error_samples(ran),
        }
    return out


def _error_samples(records: list[DeliveryRecord], top: int = 3) -> dict[str, int]:
    """The most frequent failures, by the last line of their traceback."""
    lines = collections.Counter(
        (r.error.strip().splitlines() or ["?"])[-1][:200] for r in records if r.outcome == "error"
    )
    return dict(lines.most_common(top))


# --- RPC counts ------------------------------------------------------------------------------


def _rpc_name(target: Any) -> str:
    method = getattr(target, "_method", None) or getattr(
        getattr(target, "__wrapped__", None), "_method", None
    )
    if isinstance(method, bytes):
        method = method.decode()
    if not method:
        return getattr(target, "__name__", "unknown")
    service, _, name = str(method).rpartition("/")
    return f"{service.rsplit('.', 1)[-1]}.{name}"


_UNARY = {"Commit", "BeginTransaction", "Rollback", "Publish", "Acknowledge"}
"""RPCs whose call returns with the answer (streamed reads return before the data comes)."""


class RpcCounter:
    """Counts API calls per (function being delivered, RPC) while installed, and times the
    unary ones (a transaction's Commit waits for the emulator's locks)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self.latency: dict[str, list[float]] = collections.defaultdict(list)
        self._saved: tuple[Any, Any] | None = None

    def __enter__(self) -> RpcCounter:
        counter = self
        original_call = gapic_method._GapicCallable.__call__
        original_invoke = emulator.invoker.Invoker.invoke

        def call(gapic: Any, *args: Any, **kwargs: Any) -> Any:
            function = getattr(counter._local, "function", None) or "(outside functions)"
            rpc = _rpc_name(gapic._target)
            t0 = time.perf_counter()
            try:
                return original_call(gapic, *args, **kwargs)
            finally:
                ms = (time.perf_counter() - t0) * 1000
                with counter._lock:
                    counter.counts[(function, rpc)] += 1
                    if rpc.rsplit(".", 1)[-1] in _UNARY:
                        counter.latency[rpc].append(ms)

        def invoke(invoker: Any, delivery: Any) -> Any:
            counter._local.function = delivery.function
            try:
                return original_invoke(invoker, delivery)
            finally:
                counter._local.function = None

        self._saved = (original_call, original_invoke)
        gapic_method._GapicCallable.__call__ = call  # type: ignore[method-assign]
        emulator.invoker.Invoker.invoke = invoke  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            gapic_method._GapicCallable.__call__ = self._saved[0]  # type: ignore[method-assign]
            emulator.invoker.Invoker.invoke = self._saved[1]  # type: ignore[method-assign]
            self._saved = None

    def report(self, deliveries: dict[str, Any]) -> dict[str, Any]:
        """Per function: RPCs per delivery, by method (most frequent first); unary latencies."""
        per_function: dict[str, dict[str, int]] = collections.defaultdict(dict)
        for (function, rpc), n in self.counts.most_common():
            per_function[function][rpc] = n
        out = {}
        for function, rpcs in per_function.items():
            delivered = (deliveries.get(function) or {}).get("deliveries") or 0
            total = sum(rpcs.values())
            out[function] = {
                "rpcs": total,
                "perDelivery": round(total / delivered, 1) if delivered else None,
                "byMethod": rpcs,
            }
        return {
            "byFunction": out,
            "unaryLatencyMs": {rpc: dist(ms, 1) for rpc, ms in sorted(self.latency.items())},
        }


# --- stack sampling --------------------------------------------------------------------------


def _library(filename: str) -> str:
    """The package a frame belongs to: 'grpc', 'pydantic', ..., or our own top-level folder."""
    if "site-packages/" in filename:
        rest = filename.split("site-packages/", 1)[1]
        parts = rest.split("/")
        if parts[0] == "google" and len(parts) > 2:
            return "/".join(parts[:3]) if parts[1] == "cloud" else "/".join(parts[:2])
        return parts[0].removesuffix(".py")
    if filename.startswith(REPO):
        return filename[len(REPO) :].split("/", 1)[0] + "/"
    if "/lib/python3" in filename:
        return "stdlib:" + Path(filename).stem
    return Path(filename).name


def _waiting_for_work(frame: Any) -> bool:
    """A worker blocked in the dispatcher's queue wait (threading wait within 3 frames of
    ``Dispatcher._work``)."""
    f, depth = frame, 0
    while f is not None and depth < 4:
        if f.f_code.co_name == "_work" and f.f_code.co_filename.endswith("dispatcher.py"):
            return depth > 0 and frame.f_code.co_filename.endswith("threading.py")
        f, depth = f.f_back, depth + 1
    return False


class StackSampler:
    """Samples the runtime's worker threads (``delivery-*``) every ``interval_s``.

    A worker waiting for work (in the dispatcher's queue wait) is idle and not counted."""

    def __init__(self, interval_s: float = 0.005) -> None:
        self.interval_s = interval_s
        self.busy = 0
        self.idle = 0
        self.libraries: collections.Counter[str] = collections.Counter()
        self.own_code: collections.Counter[str] = collections.Counter()
        self.leaves: collections.Counter[str] = collections.Counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> StackSampler:
        self._thread = threading.Thread(target=self._loop, name="bench-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if names.get(ident, "").startswith("delivery-"):
                    self._sample(frame)

    def _sample(self, frame: Any) -> None:
        if _waiting_for_work(frame):
            self.idle += 1
            return
        self.busy += 1
        library = _library(frame.f_code.co_filename)
        self.libraries[library] += 1
        self.leaves[f"{library}:{frame.f_code.co_name}"] += 1
        f = frame
        while f is not None:
            name = f.f_code.co_filename
            if name.startswith(REPO) and name[len(REPO) :].startswith(_FUNCTION_CODE):
                rel = name[len(REPO) :].removesuffix(".py").replace("/", ".")
                self.own_code[f"{rel}:{f.f_code.co_name}"] += 1
                break
            f = f.f_back

    def report(self, top: int = 12) -> dict[str, Any]:
        """Shares of busy worker samples (wall time, blocking included)."""

        def shares(counter: collections.Counter[str]) -> dict[str, float]:
            return {k: round(v / self.busy, 3) for k, v in counter.most_common(top)}

        total = self.busy + self.idle
        return {
            "samples": total,
            "busyShare": round(self.busy / total, 3) if total else None,
            "byLibrary": shares(self.libraries) if self.busy else {},
            "byOwnCode": shares(self.own_code) if self.busy else {},
            "byLeafFunction": shares(self.leaves) if self.busy else {},
        }


class CpuProfiler:
    """Where the worker threads' CPU time goes, by sampling: every ``interval_s`` it reads each
    ``delivery-*`` thread's CPU clock (``time.pthread_getcpuclockid``) and charges the CPU that
    thread used since the last sample to the stack it is in now: to the innermost frame (self
    time, by library and by function) and to every frame of this repository's code on it
    (cumulative time).

    It replaced cProfile on each thread: since Python 3.12 cProfile is one interpreter-wide
    ``sys.monitoring`` tool, so a second thread's ``enable()`` raised ``ValueError: Another
    profiling tool is already active``, and one profile shared by all threads mixes their calls
    up. Sampling needs no hook, works on any thread started before or after it, and costs the
    workers nothing but the GIL for a moment each interval.

    Its bias: the sampler reads a stack when it gets the GIL, i.e. where a thread gave it up (a
    blocking call, a lock, or the interpreter's 5 ms switch), so CPU spent just before a wait is
    charged to the wait (``threading``, ``grpc`` blocking calls rank high in self time). The
    cumulative shares of our own functions, whose frames stay on the stack across the
    interval, are the reliable part."""

    def __init__(self, interval_s: float = 0.005) -> None:
        self.interval_s = interval_s
        self.total = 0.0
        self.libraries: collections.Counter[str] = collections.Counter()
        self.functions: collections.Counter[str] = collections.Counter()
        self.own: collections.Counter[str] = collections.Counter()
        self._seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> CpuProfiler:
        self._thread = threading.Thread(target=self._loop, name="bench-cpu-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            frames = sys._current_frames()
            for thread in threading.enumerate():
                if thread.name.startswith("delivery-") and thread.ident in frames:
                    self._sample(thread.ident, frames[thread.ident])

    def _sample(self, ident: int, frame: Any) -> None:
        try:
            cpu = time.clock_gettime(time.pthread_getcpuclockid(ident))
        except OSError:  # the thread ended between the listing and the read
            return
        used = cpu - self._seen.get(ident, cpu)
        self._seen[ident] = cpu
        if used <= 0:
            return
        self.total += used
        code = frame.f_code
        library = _library(code.co_filename)
        self.libraries[library] += used
        self.functions[f"{library}:{code.co_name}:{code.co_firstlineno}"] += used
        charged: set[str] = set()
        f = frame
        while f is not None:
            name = f.f_code.co_filename
            if name.startswith(REPO) and name[len(REPO) :].startswith(_FUNCTION_CODE):
                rel = name[len(REPO) :].removesuffix(".py").replace("/", ".")
                key = f"{rel}:{f.f_code.co_name}"
                if key not in charged:
                    charged.add(key)
                    self.own[key] += used
            f = f.f_back

    def report(self, top: int = 15) -> dict[str, Any]:
        """Self CPU time by library and by function, cumulative CPU time of our functions, as
        shares of the sampled CPU time."""
        if not self.total:
            return {}

        def shares(counter: collections.Counter[str]) -> dict[str, float]:
            return {k: round(v / self.total, 3) for k, v in counter.most_common(top)}

        return {
            "cpuSeconds": round(self.total, 2),
            "threads": len(self._seen),
            "selfByLibrary": shares(self.libraries),
            "selfByFunction": shares(self.functions),
            "cumulativeOwnCode": shares(self.own),
        }


class Profiler:
    """All three instruments around one run; enter before the runtime starts."""

    def __init__(self) -> None:
        self.rpcs = RpcCounter()
        self.sampler = StackSampler()
        self.cpu = CpuProfiler()

    def __enter__(self) -> Profiler:
        self.cpu.__enter__()
        self.rpcs.__enter__()
        self.sampler.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sampler.__exit__(*exc)
        self.rpcs.__exit__(*exc)
        self.cpu.__exit__(*exc)

    def report(self, deliveries: dict[str, Any]) -> dict[str, Any]:
        return {
            "rpcs": self.rpcs.report(deliveries),
            "workerWallTime": self.sampler.report(),
            "workerCpuTime": self.cpu.report(),
        }
