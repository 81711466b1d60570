"""What an invocation costs in Firestore: documents read, written and deleted, transactions, RPCs.

Firestore bills per document read (a query that returns nothing still bills one), written and
deleted, not per call; so the counts come from the calls' requests and responses: a Commit's
writes, a BatchGetDocuments' documents (found or missing), a RunQuery's documents. Counting is
per invocation: ``_entry.dispatch`` opens a ``counting()`` scope and, at its end, ``emit``s one
JSON line (Cloud Logging reads a JSON line on stdout as a structured entry)

    {"severity": "INFO", "message": "firestore usage: function=onAgentTurn ...",
     "firestoreUsage": {"function": "onAgentTurn", "subject": "experiments/e1/...", "reads": 7,
                        "writes": 1, "deletes": 0, "transactions": 0, "rpcs": 9}}

where ``DLAB_USAGE_LOG`` says (``stdout``, or a file to append to; off unless set).
``python -m tools.usage_report`` adds the lines up per experiment and prices them.
Scopes nest (the benchmark counts per delivery around the entry's own scope), and calls made
outside any scope cost nothing here. Beside the billed counts, a scope keeps its sequential
round trips (``Usage.round_trips``: a chain that each call, and each Pub/Sub publish, extends
by one; reads side by side through ``functions.reads`` extend it once) and each call's place
in that chain, which the op-count tests hold to their budgets.

The counts come from a gRPC client interceptor (``interceptors``) on the channel a Firestore
client talks through: ``firestore_api``'s, built here. ``google.cloud.firestore.Client`` builds
its own channel and has no public way to take one, so its RPCs are counted only where a process
hands it a metered one: the local runtime, the tests and the benchmarks do
(``emulator.metering``, outside the deployed code). Deployed functions therefore write no line
by default: theirs would count only ``firestore_api``'s calls. Production's totals are
Firestore's own usage metrics; per-invocation figures are measured locally.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import dataclasses
import json
import threading
from collections.abc import Iterator
from typing import Any

import grpc

from functions.settings import backbone_settings

LOG_PREFIX = "firestore usage:"
_FIRESTORE = "google.firestore.v1.Firestore/"
_STREAMED_READS = {"BatchGetDocuments", "RunQuery", "RunAggregationQuery"}


@dataclasses.dataclass
class Usage:
    """Billable Firestore operations of one scope (documents, as Firestore bills them)."""

    reads: int = 0
    writes: int = 0
    deletes: int = 0
    transactions: int = 0
    """Transactions begun (each retry begins one)."""
    rpcs: int = 0
    by_method: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    round_trips: int = 0
    """Sequential round trips: the longest chain of calls each made after the one before it
    returned (calls side by side through ``functions.reads`` count once; a Pub/Sub publish of
    any number of messages is one), from the scope's start to its last call."""
    published: int = 0
    """Pub/Sub messages published (``functions.pubsub``)."""
    first_publish: int | None = None
    """The round trips up to and including the scope's first publish (None: it published
    nothing): how far into a fan-out the turns it publishes start."""
    calls: list[tuple[int, str, tuple[str, ...]]] = dataclasses.field(
        default_factory=list, repr=False
    )
    """Each call in the order made: its place in the chain of round trips, its method, and for
    a Commit the documents it writes (the benchmark and the op-count tests find a reply's
    commit by them)."""
    base: int = dataclasses.field(default=0, repr=False, compare=False)
    """The chain's length when the scope began."""

    def add(self, other: Usage) -> None:
        self.reads += other.reads
        self.writes += other.writes
        self.deletes += other.deletes
        self.transactions += other.transactions
        self.rpcs += other.rpcs
        self.by_method.update(other.by_method)
        self.round_trips += other.round_trips
        self.published += other.published

    def fields(self) -> dict[str, int]:
        return {
            "reads": self.reads,
            "writes": self.writes,
            "deletes": self.deletes,
            "transactions": self.transactions,
            "rpcs": self.rpcs,
        }

    def log_line(self, function: str, subject: str) -> str:
        counts = " ".join(f"{k}={v}" for k, v in self.fields().items())
        return f"{LOG_PREFIX} function={function} subject={subject} {counts}"

    def entry(self, function: str, subject: str) -> dict[str, Any]:
        """The structured log entry of one invocation."""
        return {
            "severity": "INFO",
            "message": self.log_line(function, subject),
            "firestoreUsage": {"function": function, "subject": subject, **self.fields()},
        }


_emit_lock = threading.Lock()


def destination() -> str | None:
    """Where ``emit`` writes: 'stdout', a file path, or None (off)."""
    value = backbone_settings().usage_log.strip()
    if value.lower() in ("", "0", "off", "false", "no"):
        return None
    return "stdout" if value.lower() in ("1", "on", "true", "yes", "stdout") else value


def emit(used: Usage, function: str, subject: str) -> None:
    """Write the invocation's usage line where ``destination`` says (nothing when off)."""
    where = destination()
    if where is None:
        return
    line = json.dumps(used.entry(function, subject))
    with _emit_lock:
        if where == "stdout":
            print(line, flush=True)
        else:
            with open(where, "a", encoding="utf-8") as out:
                out.write(line + "\n")


_scopes: contextvars.ContextVar[tuple[Usage, ...]] = contextvars.ContextVar(
    "firestore_usage", default=()
)
_chain: contextvars.ContextVar[int] = contextvars.ContextVar("round_trips", default=0)
"""Sequential round trips made so far in this context: each counted call adds one after the
longest chain it follows; a context copied to run a call side by side starts from its parent's
value, and the parent takes the longer of the two when it waits for it (``joined``)."""


def chain() -> int:
    """This context's chain of sequential round trips (``joined`` hands it back to a waiter)."""
    return _chain.get()


def joined(length: int) -> None:
    """A call run side by side, whose chain reached ``length``, has been waited for here."""
    if length > _chain.get():
        _chain.set(length)


def _round_trip(scopes: tuple[Usage, ...]) -> int:
    """One more sequential round trip in this context; its place in each scope's chain."""
    length = _chain.get() + 1
    _chain.set(length)
    for usage in scopes:
        usage.round_trips = max(usage.round_trips, length - usage.base)
    return length


def publishes(messages: int) -> None:
    """``messages`` published together and waited for: one round trip (counted in scope)."""
    scopes = _scopes.get()
    if not scopes or not messages:
        return
    length = _round_trip(scopes)
    for usage in scopes:
        usage.published += messages
        usage.calls.append((length - usage.base, "Publish", ()))
        if usage.first_publish is None:
            usage.first_publish = length - usage.base


@contextlib.contextmanager
def counting() -> Iterator[Usage]:
    """Count the Firestore operations made in this thread (context) until the block ends."""
    usage = Usage(base=_chain.get())
    token = _scopes.set((*_scopes.get(), usage))
    try:
        yield usage
    finally:
        _scopes.reset(token)


def _method(details: Any) -> str | None:
    """The Firestore method a call is for (None for another service's)."""
    method = details.method
    if isinstance(method, bytes):
        method = method.decode()
    if not method or _FIRESTORE not in method:
        return None
    return str(method).rsplit("/", 1)[-1]


def _commit_writes(request: Any) -> tuple[int, int, tuple[str, ...]]:
    """(writes, deletes, the documents written or deleted) in a Commit request."""
    writes = deletes = 0
    names = []
    for write in getattr(request, "writes", None) or ():
        pb = getattr(type(write), "pb", None)
        raw = pb(write) if callable(pb) else write
        operation = raw.WhichOneof("operation")
        if operation == "delete":
            deletes += 1
            names.append(raw.delete)
        else:
            writes += 1
            names.append(raw.update.name if operation == "update" else raw.transform.document)
    return writes, deletes, tuple(names)


def _has(response: Any, field: str) -> bool:
    try:
        return field in response
    except TypeError:
        return response.HasField(field)


class _CountedStream:
    """A streamed read's responses, counting the documents as the client consumes them."""

    def __init__(self, stream: Any, method: str, scopes: tuple[Usage, ...]) -> None:
        self._stream, self._method, self._scopes = stream, method, scopes
        self._documents = 0
        self._closed = False

    def __iter__(self) -> _CountedStream:
        return self

    def __next__(self) -> Any:
        try:
            response = next(self._stream)
        except StopIteration:
            self._finish()
            raise
        if self._method == "BatchGetDocuments":
            documents = int(_has(response, "found") or _has(response, "missing"))
        elif self._method == "RunAggregationQuery":
            documents = 0  # a count bills one read per 1,000 entries, at least one (_finish)
        else:
            documents = int(_has(response, "document"))
        self._documents += documents
        for usage in self._scopes:
            usage.reads += documents
        return response

    def _finish(self) -> None:
        """A query that returned nothing still bills one read."""
        if self._closed:
            return
        self._closed = True
        if self._documents == 0 and self._method != "BatchGetDocuments":
            for usage in self._scopes:
                usage.reads += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _count_call(scopes: tuple[Usage, ...], method: str, request: Any) -> None:
    """What a call bills before its response: the call, a commit's writes, a transaction."""
    length = _round_trip(scopes)
    names: tuple[str, ...] = ()
    if method == "Commit":
        writes, deletes, names = _commit_writes(request)
        for usage in scopes:
            usage.writes += writes
            usage.deletes += deletes
    for usage in scopes:
        usage.rpcs += 1
        usage.by_method[method] += 1
        usage.calls.append((length - usage.base, method, names))
    if method == "BeginTransaction" or (
        method == "BatchGetDocuments" and _has(request, "new_transaction")
    ):
        for usage in scopes:  # a read that begins a transaction counts as one begun
            usage.transactions += 1


class _Counting(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Counts every Firestore call made on its channel into the caller's scopes (the call is
    made in the caller's thread, so its context's)."""

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        scopes = _scopes.get()
        method = _method(details) if scopes else None
        if method is None:
            return continuation(details, request)
        outcome = continuation(details, request)
        if outcome.exception() is not None:
            _round_trip(scopes)  # refused (a create of a document that exists): nothing billed
            return outcome
        _count_call(scopes, method, request)
        if method == "ListDocuments":
            listed = max(len(outcome.result().documents), 1)  # none listed still bills one
            for usage in scopes:
                usage.reads += listed
        return outcome

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        scopes = _scopes.get()
        method = _method(details) if scopes else None
        if method is None:
            return continuation(details, request)
        _count_call(scopes, method, request)
        stream = continuation(details, request)
        if method not in _STREAMED_READS:
            return stream
        return _CountedStream(stream, method, scopes)


def interceptors() -> tuple[Any, ...]:
    """The interceptors that meter a Firestore channel (``grpc.intercept_channel``)."""
    return (_Counting(),)
