"""Worker processes: the local runtime's function invocations on every core.

The functions spend most of their CPU in pure Python (the Firestore client turning protobufs into
dicts, pydantic), so threads of one process share one core however many there are. Here each
invocation runs in one of N spawned worker processes instead; every worker runs invocations on
threads of its own, so waits on the emulators and on models still overlap. Only the invocation
moves: the dispatcher (delivery policy, chaos, retries, the delivery log, observers, the idle
barrier) stays in the runtime's process, which sends a ``Task`` and waits for its ``Outcome``.

What a worker sees of the runtime's process: the environment at its start (emulator hosts,
project), the ``DLAB_*`` and model provider variables as they are at each delivery (tests and
benchmarks set the model override after the runtime started), and the chaos fault plan of the
delivery (a seed drawn from the runtime's plan, its injected faults counted back). A model-client
wrapper that is a closure cannot cross a process boundary: such tests use ``processes=0``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Mapping
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from pydantic import BaseModel, ConfigDict, Field

from emulator import model_faults
from emulator.delivery import Delivery
from emulator.invoker import Invoker
from shared.llm import providers

log = logging.getLogger(__name__)

FORWARDED = ("DLAB_", "OPENAI_", "GEMINI_", "OLLAMA_", "GOOGLE_API_KEY")
"""Prefixes of the variables the functions read at each call (their settings, the model
override, provider endpoints and keys), so each task carries them as they are then."""

_PROGRESS_EVERY_S = 15.0
"""While workers load, how often ``start`` says how many are ready (there is no deadline)."""
_STOP_TIMEOUT_S = 5.0
_READY = 0
"""The id of the message a worker sends once its functions are loaded (task ids start at 1)."""


def forwarded_env(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables a task carries (``FORWARDED``), as the runtime's process has them now."""
    return {name: value for name, value in env.items() if name.startswith(FORWARDED)}


# --- wire messages (runtime process <-> worker process) ------------------------------------------


class Setup(BaseModel):
    """What a worker needs before its first task: it loads these functions from this source."""

    model_config = ConfigDict(frozen=True)

    env: dict[str, str]
    functions: list[str]
    source: str
    threads: int = Field(ge=1)
    log_level: int = logging.WARNING


class Task(BaseModel):
    """One invocation: exactly what functions-framework receives, plus the delivery's context."""

    model_config = ConfigDict(frozen=True)

    id: int = Field(ge=1)
    function: str
    headers: dict[str, str]
    body: bytes
    env: dict[str, str]
    faults: model_faults.FaultSpec | None = None


class Outcome(BaseModel):
    """A task's result: ``error`` None on success, else the traceback or HTTP status."""

    model_config = ConfigDict(frozen=True)

    id: int
    error: str | None = None
    faults: dict[str, int] = Field(default_factory=dict)
    """Model faults injected during the task, by kind (added to the runtime's plan)."""


# --- the worker process ----------------------------------------------------------------------


class _Environment:
    """Applies a task's forwarded variables to this worker's process environment.

    Process-wide, as in the runtime's own process: a variable set there is seen by every
    delivery after it, and one removed there is removed here."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[str, str] | None = None

    def apply(self, env: dict[str, str]) -> None:
        with self._lock:
            if env == self._last:
                return
            for name in [n for n in os.environ if n.startswith(FORWARDED)]:
                if name not in env:
                    del os.environ[name]
            os.environ.update(env)
            self._last = env


def _serve(conn: Connection, setup: Setup) -> None:
    """A worker's main: load the functions, then run each task received on a thread.

    Ctrl-C is the runtime's to handle (it stops the workers); a closed pipe means the runtime
    died, so the worker exits at once, its running invocations with it, as a killed instance."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=setup.log_level, format="%(levelname)s %(name)s: %(message)s")
    os.environ.update(setup.env)
    invoker = Invoker(setup.functions, setup.source)
    environment = _Environment()
    send_lock = threading.Lock()

    def send(outcome: Outcome) -> None:
        with send_lock, contextlib.suppress(OSError):
            conn.send(outcome)

    def run(task: Task) -> None:
        environment.apply(task.env)
        plan = model_faults.FaultPlan.from_spec(task.faults) if task.faults else None
        wrap = model_faults.wrapper(plan) if plan else None
        with providers.wrapped(wrap):
            error = invoker.call(task.function, task.body, task.headers)
        send(Outcome(id=task.id, error=error, faults=dict(plan.injected) if plan else {}))

    send(Outcome(id=_READY))
    with ThreadPoolExecutor(setup.threads, thread_name_prefix="invoke") as pool:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                os._exit(0)  # the runtime is gone: so are its invocations
            if task is None:
                return  # a clean stop: the pool finishes what runs
            pool.submit(run, task)


# --- the runtime's side ------------------------------------------------------------------------


class WorkerDied(RuntimeError):
    """A worker process ended while it ran a task (the task failed, as on a crashed instance)."""


class NotSent(WorkerDied):
    """The worker was gone before it got the task: the task may go to another one."""


class _Worker:
    """One worker process, its pipe, and the tasks it has not answered yet."""

    def __init__(self, index: int, setup: Setup) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process: BaseProcess = context.Process(
            target=_serve, args=(child, setup), name=f"dlab-worker-{index}", daemon=True
        )
        self.process.start()
        child.close()
        self.pending: dict[int, Future[Outcome]] = {}
        self.lock = threading.Lock()
        """Guards ``pending`` and ``alive``."""
        self._send_lock = threading.Lock()
        self.alive = True
        self.served = 0
        self.ready: Future[Outcome] = Future()
        self._reader = threading.Thread(target=self._read, name=f"{self.process.name}-reader")
        self._reader.daemon = True
        self._reader.start()

    def submit(self, task: Task) -> Future[Outcome]:
        future: Future[Outcome] = Future()
        with self.lock:
            if not self.alive:
                raise NotSent(f"worker process {self.process.pid} is not running")
            self.pending[task.id] = future
        try:
            with self._send_lock:
                self.conn.send(task)
        except OSError as error:
            with self.lock:
                self.alive = False  # its reader may not have seen the pipe close yet
                self.pending.pop(task.id, None)
            raise NotSent(f"worker process {self.process.pid}: {error}") from None
        return future

    def load(self) -> int:
        with self.lock:
            return len(self.pending)

    def _read(self) -> None:
        while True:
            try:
                outcome: Outcome = self.conn.recv()
            except (EOFError, OSError):
                break
            if outcome.id == _READY:
                self.ready.set_result(outcome)
                continue
            with self.lock:
                future = self.pending.pop(outcome.id, None)
                self.served += 1
            if future is not None:
                future.set_result(outcome)
        self._fail_pending()

    def _fail_pending(self) -> None:
        """The pipe closed: every task still waiting failed with the worker."""
        self.process.join(_STOP_TIMEOUT_S)
        why = WorkerDied(
            f"worker process {self.process.pid} ended (exit code {self.process.exitcode})"
        )
        with self.lock:
            self.alive = False
            pending, self.pending = self.pending, {}
        if not self.ready.done():
            self.ready.set_exception(why)
        for future in pending.values():
            future.set_exception(why)

    def ask_to_stop(self) -> None:
        """Ask the worker to finish what runs and exit (``stop`` waits for it)."""
        with self._send_lock, contextlib.suppress(OSError):
            self.conn.send(None)

    def stop(self) -> None:
        """Ask the worker to finish what runs and exit; kill it if it does not in time."""
        self.ask_to_stop()
        self.process.join(_STOP_TIMEOUT_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(_STOP_TIMEOUT_S)
        self.conn.close()
        self._reader.join(_STOP_TIMEOUT_S)


class WorkerPool:
    """N worker processes; each task goes to the one with the fewest tasks running, and a
    worker that died is replaced at the next task (its own running tasks failed with it)."""

    def __init__(self, processes: int, setup: Setup) -> None:
        if processes < 1:
            raise ValueError("a worker pool needs at least one process")
        self._processes = processes
        self._setup = setup
        self._workers: list[_Worker] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._served: dict[int, int] = {}
        """Tasks answered by workers that died and were replaced."""

    @property
    def pids(self) -> list[int | None]:
        return [w.process.pid for w in self._workers]

    def served(self) -> dict[int, int]:
        """Tasks answered so far by each worker process (by pid), replaced ones included."""
        with self._lock:
            return dict(self._served) | {w.process.pid or 0: w.served for w in self._workers}

    def start(self, progress_every: float = _PROGRESS_EVERY_S) -> None:
        """Spawn every worker and wait until each has loaded the functions.

        No deadline: on a loaded machine loading takes as long as it takes (a fixed 120 s
        stopped whole stacks at load 23-48). Every ``progress_every`` seconds it logs how many
        are ready; it fails, with ``WorkerDied``, only when a worker process ended before it
        was ready."""
        started = time.monotonic()
        self._workers = [_Worker(i, self._setup) for i in range(self._processes)]
        waiting = [w.ready for w in self._workers]
        while waiting:
            done, _ = futures.wait(waiting, progress_every, futures.FIRST_EXCEPTION)
            for future in done:
                future.result()  # a worker that died before it was ready: WorkerDied
            waiting = [f for f in waiting if f not in done]
            if waiting:
                log.warning(
                    "worker processes: %d of %d ready after %.0f s, still loading (load "
                    "average %.1f)",
                    self._processes - len(waiting),
                    self._processes,
                    time.monotonic() - started,
                    os.getloadavg()[0],
                )
        log.info(
            "%d worker processes ready in %.1f s: %s",
            self._processes,
            time.monotonic() - started,
            self.pids,
        )

    def stop(self) -> None:
        """All workers are asked first, so they finish at the same time: stopped one after
        another, a loaded machine's Ctrl-C of ``make up`` took over a minute."""
        for worker in self._workers:
            worker.ask_to_stop()
        for worker in self._workers:
            worker.stop()
        self._workers = []

    def invoke(self, delivery: Delivery, faults: model_faults.FaultPlan | None) -> str | None:
        """Run the delivery's function in a worker; None on success, else the error.

        ``faults``: the runtime's chaos plan; the task gets a seed of its own from it, and the
        faults the task injected are added to it."""
        task = Task(
            id=next(self._ids),
            function=delivery.function,
            headers=delivery.headers,
            body=delivery.body,
            env=forwarded_env(),
            faults=faults.fork() if faults else None,
        )
        try:
            outcome = self._submit(task).result()
        except WorkerDied as died:
            return f"{died}: {delivery.function} on {delivery.subject} did not finish"
        if faults is not None:
            faults.add(outcome.faults)
        return outcome.error

    def _submit(self, task: Task) -> Future[Outcome]:
        """Send the task to a worker; one that died unnoticed is replaced and the task resent."""
        for _ in range(self._processes):
            try:
                return self._least_loaded().submit(task)
            except NotSent as error:
                log.warning("%s; sending %s to another", error, task.function)
        return self._least_loaded().submit(task)

    def _least_loaded(self) -> _Worker:
        with self._lock:
            if not self._workers:
                raise WorkerDied("the worker processes are stopped")
            for index, worker in enumerate(self._workers):
                if not worker.alive:
                    self._workers[index] = self._replace(index, worker)
            return min(self._workers, key=lambda w: w.load())

    def _replace(self, index: int, dead: _Worker) -> _Worker:
        """A new worker in place of one that died (tasks queue in its pipe while it loads)."""
        log.warning(
            "worker process %s ended (exit code %s); starting another",
            dead.process.pid,
            dead.process.exitcode,
        )
        self._served[dead.process.pid or 0] = dead.served
        dead.stop()
        return _Worker(index, self._setup)
