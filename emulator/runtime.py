"""LocalRuntime: the registry's functions, triggered by the real emulators, in this process or
in worker processes (``processes=N``, ``emulator.workers``).

Production delivers Firestore and Pub/Sub events at least once, concurrently, unordered; this
runtime reproduces that on the emulators (``mode="concurrent"``) or runs the emulator's own FIFO
order (``mode="serial"``), and gives tests ``wait_until_idle()`` and a ``reset()`` that fires
nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from google.cloud import firestore

from emulator import barrier, health, model_faults, persistence, services
from emulator.chaos import Chaos, ChaosRun, ChaosSettings
from emulator.config import EmulatorOptions
from emulator.delivery import Delivery, DeliveryLog, DeliveryRecord
from emulator.dispatcher import MODES, Dispatcher, Policy
from emulator.firestore_admin import FirestoreAdmin
from emulator.http_functions import HttpFunctions, http_specs
from emulator.invoker import Invoker
from emulator.pubsub import PubSubBridge
from emulator.workers import Setup, WorkerPool
from functions import store
from functions.registry import REGISTRY, FirestoreTrigger, FunctionSpec, ScheduleTrigger
from shared.llm import providers

log = logging.getLogger(__name__)

ENV_VARS = ("FIRESTORE_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT")
_POLL_S = 0.01
TICK_TIMEOUT_S = 2.0
"""How long the ticking thread waits for a tick's publish. The client's own minute
(``PUBLISH_TIMEOUT_S``) held the ticking thread through a Pub/Sub emulator's restart: a publish
begun on the old client waited out its retries, so no watchdog ran for 38-52 s after the restart
(issue 40 row 8, the chat frozen meanwhile); a tick that times out is logged, and the next one
goes through the client made again once the runtime re-armed the emulator."""


def _refresh_function_clients() -> None:
    """The functions cache their clients per process; drop them when the env they read changes."""
    store.reset_clients()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class AttachError(RuntimeError):
    """The emulators of ``--attach`` do not deliver trigger events to this runtime."""


class LocalRuntime:
    def __init__(
        self,
        project: str = "demo-dlab",
        mode: str = "concurrent",
        workers: int = 8,
        registry: tuple[FunctionSpec, ...] = REGISTRY,
        source: str | Path | None = None,
        rules: str | Path | None = None,
        log_dir: str | Path | None = None,
        tick_s: float | None = None,
        policy: Policy | None = None,
        chaos: ChaosSettings | None = None,
        emulators: EmulatorOptions | None = None,
        processes: int = 0,
        http_port: int = 0,
    ) -> None:
        """``tick_s``: publish the scheduled functions' ticks every so many seconds (as Cloud
        Scheduler would); None leaves ticking to explicit ``tick()`` calls (tests).
        ``chaos``: the settings of ``mode="chaos"`` (default ``ChaosSettings()``).
        ``emulators``: ports, ``--attach`` and ``--import`` (default: start them on free ports).
        ``processes``: run the functions in this many worker processes (every core: the
        functions are CPU-bound Python), ``workers`` invocations at a time across them; 0 runs
        them on threads of this process, where ``model_wrapper`` and monkeypatching reach them
        (the tests). ``config.default_processes()`` is the commands' default.
        ``http_port``: where the HTTP functions (the REST API) answer, each at ``/{name}``
        (0: a free port; ``http_url``)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if processes < 0:
            raise ValueError(f"processes must not be negative, not {processes}")
        self.project = project
        self.mode = mode
        self.workers = 1 if mode == "serial" else workers
        self.registry = registry
        self.processes = processes
        self._http = HttpFunctions(http_specs(registry), source, http_port)
        self._functions = frozenset(s.name for s in registry if s.name not in self._http.names)
        self.source = source
        self.rules = Path(rules) if rules else None
        self.log_dir = Path(log_dir) if log_dir else None
        self.emulators = emulators
        self._log = DeliveryLog()
        self._gate = threading.Lock()
        self._paused = True
        self._services: services.Services | None = None
        self._attached = False
        self._saved_env: dict[str, str | None] = {}
        self._invoker: Invoker | None = None
        self._pool: WorkerPool | None = None
        self._faults: model_faults.FaultPlan | None = None
        """Chaos model faults shipped to worker processes (in-process: ``_model_wrapper``)."""
        self._dispatcher: Dispatcher | None = None
        self._bridge: PubSubBridge | None = None
        self._db: firestore.Client | None = None
        self._barrier: barrier.Barrier | None = None
        self._admin: FirestoreAdmin | None = None
        self.tick_s = tick_s
        self.policy = policy
        self.chaos_settings = (chaos or ChaosSettings()) if mode == "chaos" else chaos
        self.chaos_run: ChaosRun | None = None
        self._chaos_block: contextlib.ExitStack | None = None
        self._observers: list[Callable[[Delivery], None]] = []
        self._model_wrapper: providers.ClientWrapper | None = None
        self._ticker_stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._marker: health.TriggerMarker | None = None
        self._watch: health.Watch | None = None
        self._notices: list[str] = []
        self._notices_lock = threading.Lock()

    # --- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> LocalRuntime:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> LocalRuntime:
        if self._services is not None:
            return self
        self._services = services.acquire(self.log_dir, self.emulators)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        assert self._services is not None
        self._set_env()
        self._admin = FirestoreAdmin(self.firestore_host, self.project)
        self._marker = health.TriggerMarker(self._admin, self._register_triggers)
        self._start_functions()
        if self._http.names:
            self._http.start()
        self._dispatcher = Dispatcher(self._run, self.workers, self.policy)
        self._dispatcher.start()
        self._db = firestore.Client(project=self.project)
        self._barrier = barrier.Barrier(self._db)
        self._services.receiver.attach(self.project, self._on_firestore_event)
        self._attached = True
        self._marker.arm()
        self._bridge = PubSubBridge(self.project, self.registry, self._accept, self.pubsub_host)
        self._bridge.start()
        if self.emulators is not None and self.emulators.attach:
            self._check_delivery()
        if self.mode == "chaos":
            assert self.chaos_settings is not None
            self._chaos_block = contextlib.ExitStack()
            self.chaos_run = self._chaos_block.enter_context(self.chaos(self.chaos_settings))
        self._paused = False
        self._watch = health.Watch(
            [self._revive, self._marker.check, self._bridge.check], self._say
        )
        self._watch.start()
        if self.tick_s:
            self._ticker_stop.clear()
            self._ticker = threading.Thread(target=self._tick_forever, daemon=True)
            self._ticker.start()
        log.info(
            "runtime for %s started (%s, %d workers, %d processes)",
            self.project,
            self.mode,
            self.workers,
            self.processes,
        )

    def _register_triggers(self) -> int:
        """What the Firestore emulator must hold for this runtime (again after a restart): the
        barrier's trigger and the functions', then the rules (a cold emulator took 5-9 s to
        compile them: writes made meanwhile would fire nothing); the number of triggers."""
        assert self._admin is not None
        triggers = [(barrier.TRIGGER_ID, barrier.TRIGGER)] + [
            (spec.name, spec.trigger)
            for spec in self.registry
            if isinstance(spec.trigger, FirestoreTrigger)
        ]
        for trigger_id, trigger in triggers:
            self._admin.register_trigger(trigger_id, trigger)
        if self.rules:
            self._admin.put_rules(self.rules.read_text())
        return len(triggers)

    def _revive(self) -> str | None:
        """Our own emulators that died, started again on their ports (``Services.revive``)."""
        return "; ".join(self._require_services().revive()) or None

    def _say(self, notice: str) -> None:
        """An emulator restarted (or went quiet): one line for the live log of ``make up``.

        This process's function clients are dropped too: their gRPC channels would wait out
        their reconnect backoff, new ones connect at once."""
        log.info("%s", notice)  # make up prints it in its live log
        with self._notices_lock:
            self._notices.append(notice)
        _refresh_function_clients()

    @property
    def notices(self) -> list[str]:
        """What the runtime said about its emulators (restarted, re-armed), oldest first."""
        with self._notices_lock:
            return list(self._notices)

    def _start_functions(self) -> None:
        """Load the functions here, or in worker processes that inherit this environment."""
        if not self.processes:
            self._invoker = Invoker(self._functions, self.source)
            return
        setup = Setup(
            env=self.env,
            functions=sorted(self._functions),
            source=str(self.source or ""),
            threads=self.workers,
            log_level=logging.getLogger().getEffectiveLevel(),
        )
        self._pool = WorkerPool(self.processes, setup)
        self._pool.start()

    def _check_delivery(self, timeout: float = 10.0) -> None:
        """Attached emulators deliver trigger events wherever they were told at their start; fail
        at once, saying what to do, rather than run a backend that never hears a write."""
        assert self._barrier is not None and self._services is not None
        try:
            self._barrier.cross(timeout)
        except TimeoutError:
            raise AttachError(
                f"--attach: the Firestore emulator at {self.firestore_host} does not deliver "
                f"trigger events to this runtime: start it with --functions_emulator "
                f"{self._services.receiver.host} (`python -m emulator emulators` does)"
            ) from None

    def export(self, directory: Path) -> Path:
        """Export the Firestore data now (what ``--export-on-exit`` calls); see persistence."""
        assert self._admin is not None, "the runtime is not started"
        return persistence.export(self._admin, directory)

    @contextlib.contextmanager
    def delivery_policy(self, policy: Policy) -> Iterator[None]:
        """Deliver with ``policy`` (e.g. every event twice) for the duration of the block."""
        dispatcher, _, _ = self._parts()
        previous = dispatcher.policy
        dispatcher.set_policy(policy)
        try:
            yield
        finally:
            dispatcher.set_policy(previous)

    @contextlib.contextmanager
    def chaos(self, settings: ChaosSettings) -> Iterator[ChaosRun]:
        """Chaos for the duration of the block: duplicated, delayed and retried deliveries, and
        model faults (``emulator.chaos``)."""
        retrying = frozenset(spec.name for spec in self.registry if spec.retry)
        run = ChaosRun(
            Chaos(settings, retrying), model_faults.FaultPlan(settings.fault_rate, settings.seed)
        )
        with self.delivery_policy(run.policy), self._model_faults(run.faults):
            yield run

    @contextlib.contextmanager
    def _model_faults(self, plan: model_faults.FaultPlan) -> Iterator[None]:
        """Model calls fail as ``plan`` draws: through a client wrapper in this process, or a
        seed of the plan shipped with each task to a worker process (a wrapper cannot go)."""
        if not self.processes:
            with self.model_wrapper(model_faults.wrapper(plan)):
                yield
            return
        previous, self._faults = self._faults, plan
        try:
            yield
        finally:
            self._faults = previous

    @contextlib.contextmanager
    def model_wrapper(self, wrap: providers.ClientWrapper) -> Iterator[None]:
        """Deliveries look their model clients up through ``wrap`` for the duration of the block.

        Held here and applied per delivery (``providers.wrapped``) because the functions run on
        worker threads, which do not see a context variable set by the caller's thread. Only
        with ``processes=0``: a wrapper is a closure of this process."""
        if self.processes:
            raise RuntimeError(
                "model_wrapper needs the functions in this process (LocalRuntime(processes=0))"
            )
        previous, self._model_wrapper = self._model_wrapper, wrap
        try:
            yield
        finally:
            self._model_wrapper = previous

    # --- scheduled functions -----------------------------------------------------------------

    def tick(self, timeout: float | None = None) -> int:
        """Publish one tick to every scheduled function's topic (what Cloud Scheduler does);
        ``wait_until_idle()`` covers the work it causes. Returns the number of ticks sent.
        ``timeout``: each publish's wait (default the functions' ``PUBLISH_TIMEOUT_S``)."""
        from functions import pubsub

        timeout = pubsub.PUBLISH_TIMEOUT_S if timeout is None else timeout

        topics = sorted(
            {s.trigger.topic for s in self.registry if isinstance(s.trigger, ScheduleTrigger)}
        )
        for topic in topics:
            pubsub.publish(topic, {"tick": time.time()}, timeout=timeout)
        return len(topics)

    def _tick_forever(self) -> None:
        failing = False
        while not self._ticker_stop.wait(self.tick_s):
            if self._paused:
                continue
            try:
                self.tick(TICK_TIMEOUT_S)
            except Exception as error:  # logged once a failing run: the emulator's outage
                log.log(logging.DEBUG if failing else logging.WARNING, "scheduled tick: %s", error)
                failing = True
            else:
                failing = False

    def stop(self) -> None:
        """Stop delivering and release the emulators (stopped when their last runtime stops).

        A second Ctrl-C while stopping is ignored, so stopping always completes."""
        with _sigint_ignored():
            self._stop()

    def _stop(self) -> None:
        if self._chaos_block is not None:
            self._chaos_block.close()
            self._chaos_block = None
        self._ticker_stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
            self._ticker = None
        if self._watch is not None:
            self._watch.stop()
            self._watch = None
        if self._marker is not None:
            self._marker.remove()
            self._marker = None
        with self._gate:
            self._paused = True
        if self._bridge is not None:
            self._bridge.stop()
            self._bridge = None
        if self._services is not None and self._attached:
            self._services.receiver.detach(self.project)
            self._attached = False
        if self._dispatcher is not None:
            self._dispatcher.stop()
            self._dispatcher = None
        if self._pool is not None:
            self._pool.stop()
            self._pool = None
        self._http.stop()
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._services is not None:
            self._restore_env()
            services.release(self._services)
            self._services = None

    # --- environment -----------------------------------------------------------------------

    @property
    def firestore_host(self) -> str:
        return self._require_services().firestore.host

    @property
    def pubsub_host(self) -> str:
        return self._require_services().pubsub.host

    @property
    def env(self) -> dict[str, str]:
        values = (self.firestore_host, self.pubsub_host, self.project)
        return dict(zip(ENV_VARS, values, strict=True))

    def http_url(self, name: str) -> str:
        """Where the HTTP function ``name`` answers (``http_url("api") + "/v1"``: the API)."""
        return self._http.url(name)

    @property
    def running_services(self) -> services.Services:
        """The emulators and receiver this runtime uses (hosts, log folder)."""
        return self._require_services()

    def _require_services(self) -> services.Services:
        if self._services is None:
            raise RuntimeError("the runtime is not started")
        return self._services

    def _set_env(self) -> None:
        # The functions run in this process and find the emulators through these variables.
        self._saved_env = {name: os.environ.get(name) for name in ENV_VARS}
        os.environ.update(self.env)
        _refresh_function_clients()

    def _restore_env(self) -> None:
        ours = self.env
        for name, value in self._saved_env.items():
            if os.environ.get(name) != ours[name]:
                continue  # someone changed it since; not ours to undo
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _refresh_function_clients()

    # --- delivery --------------------------------------------------------------------------

    def _on_firestore_event(self, delivery: Delivery) -> None:
        if delivery.function == barrier.TRIGGER_ID:
            if self._barrier is not None:
                self._barrier.arrived(delivery.subject)
            return
        for observer in list(self._observers):
            observer(delivery)
        self._accept(delivery)

    def _accept(self, delivery: Delivery) -> None:
        """Hand a delivery to the workers, or record why it is dropped."""
        with self._gate:
            if delivery.drop_reason:
                why = delivery.drop_reason
            elif self._paused or self._dispatcher is None:
                why = "reset"
            elif delivery.function not in self._functions:
                why = "unknown function"
            else:
                self._dispatcher.submit(delivery)
                return
        self._drop(delivery, why)

    def _drop(self, delivery: Delivery, why: str) -> None:
        log.debug("dropped %s on %s: %s", delivery.function, delivery.subject, why)
        self._log.dropped(delivery, why)
        delivery.finish(True)

    def _run(self, delivery: Delivery) -> bool:
        started, t0 = time.time(), time.perf_counter()
        error = self._invoke(delivery)
        duration_ms = (time.perf_counter() - t0) * 1000
        outcome = "ok" if error is None else "error"
        self._log.add(
            DeliveryRecord(
                delivery.function,
                delivery.subject,
                delivery.event_id,
                started,
                duration_ms,
                outcome,
                error or "",
                queued_ms=(started - delivery.received) * 1000,
                attempt=delivery.attempt,
            )
        )
        if error is not None:
            log.warning("%s failed on %s:\n%s", delivery.function, delivery.subject, error)
        return error is None

    def _invoke(self, delivery: Delivery) -> str | None:
        """The function's run, in a worker process or here; None on success, else the error."""
        if self._pool is not None:
            return self._pool.invoke(delivery, self._faults)
        assert self._invoker is not None
        with providers.wrapped(self._model_wrapper):
            return self._invoker.invoke(delivery)

    # --- inspection ------------------------------------------------------------------------

    @property
    def worker_processes(self) -> dict[int, int]:
        """Tasks each worker process answered so far, by pid (empty with ``processes=0``)."""
        return self._pool.served() if self._pool is not None else {}

    @property
    def deliveries(self) -> list[DeliveryRecord]:
        return self._log.records()

    def deliveries_table(self, last: int | None = None) -> str:
        return self._log.table(last)

    def clear_deliveries(self) -> None:
        self._log.clear()

    @contextlib.contextmanager
    def observing(self, observer: Callable[[Delivery], None]) -> Iterator[None]:
        """Call ``observer`` with every Firestore event as the emulator sent it (once per write
        and trigger, before any delivery policy), for the duration of the block: an audit of
        every write that tests can count."""
        self._observers.append(observer)
        try:
            yield
        finally:
            self._observers.remove(observer)

    # --- test support ----------------------------------------------------------------------

    def wait_until_idle(self, timeout: float = 60.0) -> None:
        """Return once no event is queued or running, cascades included; else TimeoutError.

        A round: cross the barrier (every earlier Firestore event received), wait for the workers
        and for the messages published from this process. Done when nothing was accepted or
        finished during a round: work finishing mid-round may have written documents whose
        events only the next round's barrier is sure to see.
        """
        dispatcher, bridge, marker = self._parts()
        deadline = time.monotonic() + timeout
        try:
            while True:
                activity = dispatcher.activity
                marker.cross(deadline - time.monotonic())
                while dispatcher.busy() or bridge.outstanding():
                    if time.monotonic() > deadline:
                        raise TimeoutError("work still pending")
                    time.sleep(_POLL_S)
                if dispatcher.activity == activity:
                    return
        except TimeoutError:
            raise TimeoutError(self._summary(f"not idle after {timeout:.1f} s")) from None

    def reset(self, timeout: float = 30.0) -> None:
        """Delete all data without running any function.

        The delivery log restarts empty, then shows what the reset dropped ('dropped:reset').
        """
        dispatcher, bridge, marker = self._parts()
        assert self._admin is not None
        self._log.clear()
        with self._gate:
            self._paused = True
            queued = dispatcher.drain()
        try:
            for delivery in queued:
                self._drop(delivery, "reset")
            if not dispatcher.wait_not_running(timeout):
                raise TimeoutError(self._summary("reset: functions still running"))
            assert self._marker is not None
            self._marker.reset(self._admin.reset)  # the health marker stays
            marker.cross(timeout)  # every delete event of the reset has now been dropped
            deadline = time.monotonic() + timeout
            while bridge.outstanding() and time.monotonic() < deadline:
                time.sleep(_POLL_S)  # in-flight messages arrive, are acked and dropped
            if bridge.outstanding():
                log.warning("reset: messages never arrived: %s", bridge.outstanding())
            bridge.forget()
            for delivery in dispatcher.drain():
                self._drop(delivery, "reset")
        finally:
            with self._gate:
                self._paused = False

    def _parts(self) -> tuple[Dispatcher, PubSubBridge, barrier.Barrier]:
        if self._dispatcher is None or self._bridge is None or self._barrier is None:
            raise RuntimeError("the runtime is not started")
        return self._dispatcher, self._bridge, self._barrier

    def _summary(self, headline: str) -> str:
        lines = [f"{headline} (project {self.project}, mode {self.mode})"]
        if self._dispatcher is not None:
            running, queued, delayed = self._dispatcher.snapshot()
            now = time.time()
            for d in running:
                since = now - (d.started or now)
                lines.append(f"  running: {d.function} on {d.subject} for {since:.1f} s")
            lines.append(f"  queued: {len(queued)}, delayed: {delayed}")
            lines += [f"    {d.function} on {d.subject}" for d in queued[:10]]
        if self._bridge is not None and (pending := self._bridge.outstanding()):
            lines.append(f"  Pub/Sub messages not acked yet: {pending[:10]}")
        lines.append("  last deliveries:")
        lines += ["    " + line for line in self._log.table(last=10).splitlines()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        state = "started" if self._services else "stopped"
        return f"LocalRuntime(project={self.project!r}, mode={self.mode!r}, {state})"
