"""What a run's model calls cost, and the caps a run may set on it.

A run is the document a system's work belongs to: ``experiments/{e}``, ``societies/{s}``,
``debates/{d}``, ``conversations/{c}``. Every model attempt (accepted, rejected, corrective,
failed at the provider) adds to the run's totals, kept as sharded counters
``{run}/spend/{shard}`` (``calls``, ``promptTokens``, ``completionTokens``, ``costUsd``)
incremented in the write that logs the attempt: no document every agent writes at once, and no
round trip of its own. ``totals`` sums the shards with one aggregation query.

A run document may set ``budget: {maxCalls, maxTokens, maxCostUsd}``. ``check`` runs before each
model attempt: once a cap is reached it marks the run (``budgetReached``, one error record) and
raises ``BudgetReached``, which the unit of work takes as a pause, not a failure. Raising the cap
resumes: the next check passes and clears the mark. Calls in flight when the cap is reached
still land, so the overshoot is at most those.
"""

from __future__ import annotations

import dataclasses
import random
import time
from typing import Annotated, Any

from google.cloud import firestore
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from functions import errors, reads, store
from functions.settings import backbone_settings
from shared.errors import Pause
from shared.models import DocumentError, now

SPEND = "spend"
"""The run's collection of counter shards."""
FIELDS = ("calls", "promptTokens", "completionTokens", "costUsd")


def _not_a_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a number, not true or false")
    return value


Cap = BeforeValidator(_not_a_boolean)


class Budget(BaseModel):
    """A run's caps; an absent (or null) one does not limit, 0 allows no call. Booleans are
    not numbers (``maxCalls: true`` is refused, never taken as 1)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    max_calls: Annotated[int, Cap] | None = Field(default=None, alias="maxCalls", ge=0)
    max_tokens: Annotated[int, Cap] | None = Field(default=None, alias="maxTokens", ge=0)
    max_cost_usd: Annotated[float, Cap] | None = Field(default=None, alias="maxCostUsd", ge=0)


NOT_A_MAP = (
    "must be a map of caps ({maxCalls, maxTokens, maxCostUsd}) or null; to allow no call, "
    "set budget.maxCalls to 0"
)


@dataclasses.dataclass(frozen=True)
class Totals:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def reached(self, budget: Budget) -> str | None:
        """The first cap these totals reached (``maxCalls=10``), or None."""
        caps = (
            ("maxCalls", budget.max_calls, self.calls),
            ("maxTokens", budget.max_tokens, self.tokens),
            ("maxCostUsd", budget.max_cost_usd, self.cost_usd),
        )
        return next(
            (f"{name}={cap}" for name, cap, used in caps if cap is not None and used >= cap), None
        )


class BudgetReached(Pause):
    """The run reached a cap of its budget: no model call is made. Recorded on the run once;
    the unit of work lets its lease go without counting a failure (``work.State.PAUSED``)."""

    def __init__(self, run: str, cap: str, totals: Totals) -> None:
        super().__init__(
            f"{run} reached its budget ({cap}): {totals.calls} call(s), {totals.tokens} "
            f"token(s), ${totals.cost_usd:.4f}; raise budget.{cap.split('=')[0]} to resume"
        )
        self.run = run
        self.cap = cap
        self.totals = totals


def counts(model_name: str, prompt_tokens: int, completion_tokens: int) -> dict[str, float]:
    """One attempt's increments of the run's totals."""
    cost = backbone_settings().cost_usd(model_name, prompt_tokens, completion_tokens)
    return {
        "calls": 1,
        "promptTokens": prompt_tokens,
        "completionTokens": completion_tokens,
        "costUsd": cost,
    }


def _shard(run: str) -> str:
    return f"{run}/{SPEND}/{random.randrange(backbone_settings().spend_shards)}"


def record(
    run: str,
    log_path: str,
    log: dict[str, Any],
    added: dict[str, float],
    *,
    later: bool,
    beside: dict[str, dict[str, Any]] | None = None,
) -> None:
    """Write an attempt's log and add it to the run's totals, in one write: with the step's
    own batch (``later``, inside a ``store.writing_later`` block), else in a batch now.
    ``beside``: documents that belong to the attempt (its journal entry), in the same write."""
    shard = _shard(run)
    also = beside or {}
    if later and store.writes_later():
        for path, data in {log_path: log, **also}.items():
            store.set_later(path, data)
        store.add_later(shard, added)
        return
    batch = store.db().batch()
    for path, data in {log_path: log, **also}.items():
        batch.set(store.ref(path), data)
    batch.set(
        store.ref(shard), {name: firestore.Increment(v) for name, v in added.items()}, merge=True
    )
    batch.commit()


def totals(run: str) -> Totals:
    """The run's totals so far: the shards summed by one aggregation query."""
    first, *rest = FIELDS
    query = store.db().collection(f"{run}/{SPEND}").sum(first, alias=first)
    for name in rest:
        query.sum(name, alias=name)
    rows: Any = query.get()  # one row (a list of results, one per alias), typed as flat
    result = {item.alias: item.value for row in rows for item in row}
    return Totals(
        calls=int(result.get("calls") or 0),
        prompt_tokens=int(result.get("promptTokens") or 0),
        completion_tokens=int(result.get("completionTokens") or 0),
        cost_usd=float(result.get("costUsd") or 0.0),
    )


@dataclasses.dataclass(frozen=True)
class _RunBudget:
    budget: Budget | None
    marked: str | None
    """The cap the run's ``budgetReached`` names, if it shows one (cleared once raised)."""


_known: dict[str, tuple[float, _RunBudget]] = {}
"""The runs' budgets this instance read, with when (``DLAB_BUDGET_REFRESH_SECONDS``)."""


def _remember(run: str, known: _RunBudget) -> None:
    _known[run] = (time.monotonic(), known)


def _parsed(run: str, data: dict[str, Any]) -> _RunBudget:
    """The budget and mark of the run document's ``data``; DocumentError names a bad cap."""
    raw = data.get("budget")
    if raw is not None and not isinstance(raw, dict):  # 0, false, "": never ignored
        raise DocumentError(run, "budget", NOT_A_MAP)
    try:
        budget = Budget.model_validate(raw) if raw else None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in ("budget", *first["loc"]))
        raise DocumentError(run, where, first["msg"]) from None
    mark = data.get("budgetReached")
    return _RunBudget(budget, str(mark.get("cap")) if isinstance(mark, dict) else None)


def seen(run: str, data: dict[str, Any] | None) -> None:
    """The invocation has just read the run document whole (``data``): its budget answers this
    invocation's checks without a read of their own. Read now, it is as fresh as that read
    (a budget raised after it is seen by the next invocation; one raised before, by this
    one). A budget that does not parse is left to the check, which records it."""
    if data is None:
        return
    try:
        known = _parsed(run, data)
    except DocumentError:
        return
    reads.note(("runBudget", run), known)
    _remember(run, known)


def _run_budget(run: str) -> _RunBudget:
    """The run's budget as this invocation read it (``seen``), or as this instance read it in
    the last few seconds, else read now (a field mask: nothing else is sent)."""

    def load() -> _RunBudget:
        kept = _known.get(run)
        refresh = backbone_settings().budget_refresh_seconds
        if kept is not None and time.monotonic() - kept[0] < refresh:
            return kept[1]
        data = store.snapshot_data(run, fields=["budget", "budgetReached"]) or {}
        known = _parsed(run, data)
        _remember(run, known)
        return known

    return reads.once(("runBudget", run), load)


def check(run: str) -> None:
    """Before a model attempt: BudgetReached when the run's totals reached a cap of its budget
    (the run marked and recorded first); a run back under its caps loses its mark."""
    known = _run_budget(run)
    if known.budget is None:
        return
    used = totals(run)
    cap = used.reached(known.budget)
    if cap is None:
        if known.marked:
            store.ref(run).update({"budgetReached": firestore.DELETE_FIELD})
            reads.note(("runBudget", run), _RunBudget(known.budget, None))
            _remember(run, _RunBudget(known.budget, None))
        return
    reached = BudgetReached(run, cap, used)
    if known.marked != cap:  # marked once: re-driven work meeting it again writes nothing
        _mark(run, reached)
        reads.note(("runBudget", run), _RunBudget(known.budget, cap))
        _remember(run, _RunBudget(known.budget, cap))
    raise reached


def _mark(run: str, reached: BudgetReached) -> None:
    """The run's one record: ``budgetReached`` on its document and an error record whose id
    names the cap alone, so every agent that meets it refreshes the same one."""
    used = reached.totals
    mark = {
        "at": now(),
        "calls": used.calls,
        "tokens": used.tokens,
        "costUsd": used.cost_usd,
        "cap": reached.cap,
    }
    store.ref(run).set({"budgetReached": mark}, merge=True)
    reason = f"budget reached ({reached.cap}); model calls paused until it is raised"
    errors.record_error(
        errors.current_function(), DocumentError(run, "budget", reason), severity="warning"
    )
