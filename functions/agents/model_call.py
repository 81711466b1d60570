"""One structured answer from the agent's model.

Every attempt is logged and added to its run's totals (``functions.spend``) in the same write.
Before each attempt the run's budget is checked (``spend.BudgetReached``: no call is made) and a
slot of the provider's shared rate limit taken (``functions.rate_limit``, off unless set).
Provider faults (transport failures, timeouts, 429, 5xx, a body with no completion in it) are
retried with backoff within the function's deadline and end in ProviderFailing (the agent
waits). A reply that arrived is an answer: one that does not parse (HTML, empty, no JSON where
JSON was asked) or does not validate goes back to the model as a corrective turn with the exact
reason (at most ``num_retries`` times), then ends in the system's invalid outcome
(AnswerFailed). See shared/llm/policy.py for the settings.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from functions import journal, rate_limit, spend
from functions.deadline import deadline
from shared import paths
from shared.errors import AlreadyRecorded, WorkError
from shared.llm import Message, ModelError, ModelReply, ModelRequest, client_for, effective_api_type
from shared.llm.base import ProviderFailing, Usage
from shared.llm.credentials import credentials_for
from shared.llm.json_output import check_schema, parse_json_reply
from shared.llm.policy import call_policy
from shared.llm.protocol import check_prompt_size, check_reply
from shared.llm.retry import remaining, retrying
from shared.llm.tools import ToolUse
from shared.models import (
    MediatorProfile,
    ModelLogEntry,
    ModelResponse,
    ParticipantProfile,
    TokenUsage,
    now,
)
from shared.prompts import corrective_turn
from shared.stages import AnswerValidationError


class ProviderUnavailable(AlreadyRecorded):
    """The model provider was still failing (rate limit, outage) when the function's time ran
    out. The error is recorded; the work is handed to (or is) a retrying function, so the agent
    resumes once the provider recovers instead of waiting for someone to touch it."""


DEFAULT_RETRIES = 3  # Deliberate Lab's default for survey and ranking prompts
CALL_TIMEOUT_CAP_S = 120.0


@dataclasses.dataclass(frozen=True)
class CallSite:
    """Who asks, where: what a log entry is filed under."""

    experiment_id: str
    participant: ParticipantProfile | MediatorProfile
    """The agent that asks (a participant, or a mediator in a chat)."""
    stage_id: str
    description: str
    log_collection: str = ""
    """Where the call's log entries go; '' for the experiment's ``logs`` (a society, a debate
    and a conductor step keep their own)."""
    run: str = ""
    """The run document whose totals and budget the calls count against; '' to derive it: the
    root document of ``log_collection`` (``societies/{s}``, ``debates/{d}``,
    ``conversations/{c}``), else ``experiments/{experiment_id}``."""

    @property
    def run_path(self) -> str:
        if self.run:
            return self.run
        if self.log_collection:
            return "/".join(self.log_collection.split("/")[:2])
        return paths.build(paths.EXPERIMENT, experimentId=self.experiment_id)


@dataclasses.dataclass
class CallStats:
    """What one ``ask`` cost: attempts (model calls, re-prompts and provider retries included)
    and the tokens the providers reported, the same whoever paid; ``reused``: how many of the
    calls were replies taken from the journal (paid once, by an earlier execution, and counted
    in the run's totals then)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused: int = 0


@dataclasses.dataclass(frozen=True)
class Arrived:
    """A turn's reply: from the provider now, or ``recorded`` in the journal before."""

    reply: ModelReply
    started: float
    key: str
    """The call's journal key (``journal.key``)."""
    recorded: bool = False


class AnswerFailed(WorkError):
    def __init__(self, attempts: int, last_error: str) -> None:
        super().__init__(f"no valid answer after {attempts} attempt(s): {last_error}")
        self.attempts = attempts
        self.last_error = last_error


def conversation_text(request: ModelRequest) -> str:
    """The prompt as logged: the text alone, or ``ROLE: text`` turns (as DL logs messages)."""
    if not request.history:
        return request.prompt
    return "\n\n".join(f"{m.role.upper()}: {_turn_text(m)}" for m in request.messages)


def _turn_text(message: Message) -> str:
    """A turn's text, with its tool calls or results written out."""
    results = [f"{r.name} -> {r.content}" for r in message.tool_results]
    calls = [f"[call {c.name} {json.dumps(c.arguments)}]" for c in message.tool_calls]
    return "\n".join(p for p in (message.text, *calls, *results) if p)


class _Call:
    """One ask: numbers and logs every attempt of every turn."""

    def __init__(self, site: CallSite, api_keys: dict[str, Any] | None) -> None:
        self.site = site
        settings = site.participant.agent_config.model_settings  # type: ignore[union-attr]
        self.settings = settings
        self.client = client_for(settings.api_type)
        self.credentials = credentials_for(settings.api_type, api_keys)
        self.attempts = 0
        self.policy = call_policy()  # a mistyped setting: a recorded CONFIG_ERROR
        self.stats = CallStats()

    def log(self, request: ModelRequest, started: float, **outcome: Any) -> None:
        """Log one attempt and count it. A reply is journaled in the same write; one taken
        from the journal (``arrived.recorded``) was logged and counted when it arrived."""
        arrived: Arrived | None = outcome.pop("arrived", None)
        reply = arrived.reply if arrived is not None else None
        usage = reply.usage if reply else Usage()
        self.stats.calls += 1
        self.stats.prompt_tokens += usage.prompt_tokens
        self.stats.completion_tokens += usage.completion_tokens
        if arrived is not None and arrived.recorded:
            self.stats.reused += 1
            return
        p = self.site.participant
        log_id = uuid.uuid4().hex
        entry = ModelLogEntry(
            id=log_id,
            experiment_id=self.site.experiment_id,
            cohort_id=p.current_cohort_id,
            participant_id=p.private_id,
            stage_id=self.site.stage_id,
            public_id=p.public_id,
            private_id=p.private_id,
            agent_id=p.agent_config.agent_id if p.agent_config else "",
            description=self.site.description,
            prompt=conversation_text(request),
            api_type=effective_api_type(self.settings.api_type),
            model_name=request.model_name,
            attempt=self.attempts,
            latency_ms=round((time.perf_counter() - started) * 1000, 2),
            created_timestamp=now(),
            response=ModelResponse(
                status=outcome.get("status", "OK"),
                raw_response=reply.raw if reply else outcome.get("raw"),
                text=reply.text if reply else None,
                parsed_response=outcome.get("parsed"),
                error_message=outcome.get("error"),
                usage=TokenUsage(
                    prompt_tokens=usage.prompt_tokens,
                    completion_tokens=usage.completion_tokens,
                    total_tokens=usage.total_tokens,
                ),
            ),
        )
        path = (
            f"{self.site.log_collection}/{log_id}"
            if self.site.log_collection
            else paths.build(paths.MODEL_LOG, experimentId=self.site.experiment_id, logId=log_id)
        )
        added = spend.counts(request.model_name, usage.prompt_tokens, usage.completion_tokens)
        # the reply the step uses is logged (and counted) with the step's own write
        later = bool(outcome.get("accepted"))
        beside = self._journaled(request, arrived, path) if arrived is not None else {}
        spend.record(
            self.site.run_path,
            path,
            entry.to_firestore(),
            added,
            later=later,
            beside=beside,
        )

    def _journaled(self, request: ModelRequest, arrived: Arrived, log: str) -> dict[str, Any]:
        """The reply's journal entry, to be written with its log."""
        recorded = journal.entry(
            arrived.key,
            request,
            arrived.reply,
            log=log,
            description=self.site.description,
            stage_id=self.site.stage_id,
            agent=self.site.participant.private_id,
        )
        return {journal.path(self.site.run_path, arrived.key): recorded}

    def generate(self, request: ModelRequest) -> Arrived:
        """One turn: its recorded reply when an earlier execution got one (``functions.journal``),
        else provider attempts with backoff, each logged on failure; a provider still failing
        when attempts or time run out is ProviderFailing (retryable: the agent waits)."""
        key = journal.key(request)
        recorded = journal.recorded(self.site.run_path, key)
        if recorded is not None:
            return Arrived(recorded, time.perf_counter(), key, recorded=True)
        try:
            reply, started = self._attempts(request)
        except ModelError as error:
            if error.retryable:
                raise ProviderFailing(self.attempts, error) from error
            raise
        return Arrived(reply, started, key)

    def _attempts(self, request: ModelRequest) -> tuple[ModelReply, float]:
        end = deadline()
        provider = effective_api_type(self.settings.api_type)
        for attempt in retrying(end, self.policy.max_attempts, wait=self.policy.wait()):
            with attempt:
                spend.check(self.site.run_path)  # BudgetReached: no call is made
                rate_limit.acquire(provider, request, end)
                self.attempts += 1
                started = time.perf_counter()
                timed = dataclasses.replace(
                    request, timeout_s=remaining(end, cap=CALL_TIMEOUT_CAP_S)
                )
                try:
                    return self.client.generate(timed), started
                except ModelError as error:
                    self.log(request, started, status=error.status, error=str(error), raw=error.raw)
                    raise
        raise AssertionError("unreachable: tenacity reraises the last error")


def ask(
    site: CallSite,
    prompt: str,
    schema: dict[str, Any] | None,
    validate: Callable[[Any], Any],
    *,
    retries: int | None = DEFAULT_RETRIES,
    generation_config: dict[str, Any] | None = None,
    api_keys: dict[str, Any] | None = None,
    parse: Callable[[str], Any] = parse_json_reply,
    stats: CallStats | None = None,
    system: str | None = None,
    tools: ToolUse | None = None,
    corrective: Callable[[str], str] = corrective_turn,
) -> Any:
    """Ask until ``validate(parsed_json)`` accepts a reply; the answer. What it cost accumulates
    into ``stats`` as it goes (so a caller sees the cost of a failed ask too).
    ModelError (configuration, or ProviderFailing at the deadline) propagates; when turns run
    out, AnswerFailed (the agent may move on) or, with ``DLAB_MOVE_ON_WITHOUT_ANSWER=false``,
    a ModelError (it stays). ``corrective`` makes the turn that sends a validation error back
    (a conductor workflow may send it verbatim, as Diskurs does).

    With ``tools``, a reply of tool calls is a turn too (as in Diskurs): ``tools`` records and
    runs them, their results go back to the model. A re-execution takes the replies from the
    journal and the tools' results from their record: neither is asked nor run again."""
    check_prompt_size(f"{system}\n\n{prompt}" if system else prompt)
    call = _Call(site, api_keys)
    if stats is not None:
        call.stats = stats
    history: tuple[Message, ...] = ()
    last_error = ""
    turns = (retries if retries is not None else DEFAULT_RETRIES) + 1
    for _ in range(turns):
        request = ModelRequest(
            prompt=prompt,
            response_schema=schema,
            model_name=call.settings.model_name,
            seed=f"{site.participant.private_id}:{site.stage_id}:{site.description}",
            generation_config=generation_config or {},
            history=history,
            credentials=call.credentials,
            system=system,
            tools=tools.specs if tools is not None else (),
        )
        arrived = call.generate(request)
        reply, started = arrived.reply, arrived.started
        if reply.tool_calls and tools is not None:
            call.log(request, started, arrived=arrived, status="TOOL_CALLS")
            history = (*history, *tools.answer(reply.tool_calls, reply.text, arrived.key))
            last_error = "the model was still calling tools when its turns ran out"
            continue
        try:
            check_reply(reply.text, expects_json=schema is not None)
            parsed = parse(reply.text)
            answer = validate(parsed)  # the stage's check says most precisely what is wrong
            check_schema(parsed, schema)  # then the schema: a persona's own may ask for more
        except AnswerValidationError as error:
            last_error = str(error)
            call.log(request, started, arrived=arrived, status="INVALID_RESPONSE", error=last_error)
            history = (
                *history,
                Message("assistant", reply.text),
                Message("user", corrective(last_error)),
            )
            continue
        except Exception as error:  # the validator's own failure (user code): the call is logged
            text = f"{type(error).__name__}: {error}"
            call.log(request, started, arrived=arrived, status="VALIDATOR_ERROR", error=text)
            raise
        call.log(request, started, arrived=arrived, parsed=_loggable(parsed), accepted=True)
        return answer
    raise _no_answer(call, last_error)


def _no_answer(call: _Call, last_error: str) -> Exception:
    """The model's own failure: AnswerFailed lets the agent move on; the policy may forbid it."""
    failed = AnswerFailed(call.attempts, last_error)
    if call.policy.move_on_without_answer:
        return failed
    return ModelError(
        "INVALID_RESPONSE",
        f"{failed}; the agent waits (DLAB_MOVE_ON_WITHOUT_ANSWER=false)",
        field="stageData",
    )


def _loggable(parsed: Any) -> Any:
    """Firestore cannot store nested arrays; keep such replies as JSON text."""
    if isinstance(parsed, list) and any(isinstance(x, list) for x in parsed):
        return json.dumps(parsed)
    return parsed
