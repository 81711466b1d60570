"""What an invocation costs in Firestore: documents read, written and deleted, transactions, RPCs.

Firestore bills per document read (a query that returns nothing still bills one), written and
deleted, not per call; so the counts come from the calls' requests and responses: a Commit's
writes, a BatchGetDocuments' documents (found or missing), a RunQuery's documents. Counting is
per invocation: ``_entry.dispatch`` opens a ``counting()`` scope and, at its end, ``emit``s one
JSON line (Cloud Logging reads a JSON line on stdout as a structured entry)

    {"severity": "INFO", "message": "firestore usage: function=onAgentTurn ...",
     "firestoreUsage": {"function": "onAgentTurn", "subject": "experiments/e1/...", "reads": 7,
                        "writes": 1, "deletes": 0, "transactions": 0, "rpcs": 9}}

to stdout in production (Cloud Run sets ``K_SERVICE``), or where ``DLAB_USAGE_LOG`` says
(``stdout``, or a file to append to; ``off``); locally it is off unless set.
``python -m tools.usage_report`` adds the lines up per experiment and prices them.
Scopes nest (the benchmark counts per delivery around the entry's own scope), and calls made
outside any scope cost nothing here. Installed once per process by patching the generated
clients' call wrapper, which every Firestore RPC goes through.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import dataclasses
import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import google.api_core.gapic_v1.method as gapic_method

LOG_PREFIX = "firestore usage:"
USAGE_LOG_ENV = "DLAB_USAGE_LOG"
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

    def add(self, other: Usage) -> None:
        self.reads += other.reads
        self.writes += other.writes
        self.deletes += other.deletes
        self.transactions += other.transactions
        self.rpcs += other.rpcs
        self.by_method.update(other.by_method)

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
    value = os.environ.get(USAGE_LOG_ENV)
    if value is None:
        return "stdout" if os.environ.get("K_SERVICE") else None
    value = value.strip()
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
_install_lock = threading.Lock()
_installed = False


@contextlib.contextmanager
def counting() -> Iterator[Usage]:
    """Count the Firestore operations made in this thread (context) until the block ends."""
    install()
    usage = Usage()
    token = _scopes.set((*_scopes.get(), usage))
    try:
        yield usage
    finally:
        _scopes.reset(token)


def _method(gapic: Any) -> str | None:
    target = gapic._target
    method = getattr(target, "_method", None) or getattr(
        getattr(target, "__wrapped__", None), "_method", None
    )
    if isinstance(method, bytes):
        method = method.decode()
    if not method or _FIRESTORE not in str(method):
        return None
    return str(method).rsplit("/", 1)[-1]


def _commit_writes(request: Any) -> tuple[int, int]:
    """(writes, deletes) in a Commit request."""
    writes = deletes = 0
    for write in getattr(request, "writes", None) or ():
        pb = getattr(type(write), "pb", None)
        raw = pb(write) if callable(pb) else write
        if raw.WhichOneof("operation") == "delete":
            deletes += 1
        else:
            writes += 1
    return writes, deletes


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


def _counted_call(original: Any) -> Any:
    def call(gapic: Any, request: Any = None, *args: Any, **kwargs: Any) -> Any:
        scopes = _scopes.get()
        method = _method(gapic) if scopes else None
        response = original(gapic, request, *args, **kwargs)
        if method is None:
            return response
        for usage in scopes:
            usage.rpcs += 1
            usage.by_method[method] += 1
        if method == "Commit":
            writes, deletes = _commit_writes(request)
            for usage in scopes:
                usage.writes += writes
                usage.deletes += deletes
        elif method == "BeginTransaction":
            for usage in scopes:
                usage.transactions += 1
        elif method == "ListDocuments":
            listed = max(len(response.documents), 1)  # none listed still bills one read
            for usage in scopes:
                usage.reads += listed
        elif method in _STREAMED_READS:
            if method == "BatchGetDocuments" and _has(request, "new_transaction"):
                for usage in scopes:  # a read that begins a transaction
                    usage.transactions += 1
            return _CountedStream(response, method, scopes)
        return response

    call.__wrapped__ = original  # type: ignore[attr-defined]
    return call


def install() -> None:
    """Patch the generated clients' call wrapper once per process (idempotent)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        original = gapic_method._GapicCallable.__call__
        gapic_method._GapicCallable.__call__ = _counted_call(original)  # type: ignore[method-assign]
        _installed = True
