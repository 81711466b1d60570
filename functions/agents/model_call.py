"""One structured answer from the agent's model: every attempt logged, invalid replies corrected."""

from __future__ import annotations

import dataclasses
import time
import uuid
from typing import Any

from functions import store
from shared import paths
from shared.llm import (
    ModelError,
    ModelReply,
    ModelRequest,
    client_for,
    effective_api_type,
)
from shared.llm.json_output import parse_json_reply
from shared.models import (
    ModelLogEntry,
    ModelResponse,
    ParticipantProfile,
    TokenUsage,
    now,
)
from shared.prompts import corrective_turn
from shared.stages import AnswerValidationError

DEFAULT_RETRIES = 3  # Deliberate Lab's default for survey and ranking prompts


@dataclasses.dataclass(frozen=True)
class CallSite:
    """Who asks, where: what a log entry is filed under."""

    experiment_id: str
    participant: ParticipantProfile
    stage_id: str
    description: str


class AnswerFailed(Exception):
    def __init__(self, attempts: int, last_error: str) -> None:
        super().__init__(f"no valid answer after {attempts} attempt(s): {last_error}")
        self.attempts = attempts
        self.last_error = last_error


def _log(
    site: CallSite, request: ModelRequest, attempt: int, started: float, **outcome: Any
) -> None:
    reply: ModelReply | None = outcome.get("reply")
    usage = reply.usage if reply else None
    p = site.participant
    settings = p.agent_config.model_settings if p.agent_config else None
    log_id = uuid.uuid4().hex
    entry = ModelLogEntry(
        id=log_id,
        experiment_id=site.experiment_id,
        cohort_id=p.current_cohort_id,
        participant_id=p.private_id,
        stage_id=site.stage_id,
        public_id=p.public_id,
        private_id=p.private_id,
        agent_id=p.agent_config.agent_id if p.agent_config else "",
        description=site.description,
        prompt=request.prompt,
        api_type=effective_api_type(settings.api_type) if settings else "",
        model_name=request.model_name,
        attempt=attempt,
        latency_ms=round((time.perf_counter() - started) * 1000, 2),
        created_timestamp=now(),
        response=ModelResponse(
            status=outcome.get("status", "OK"),
            raw_response=reply.raw if reply else None,
            text=reply.text if reply else None,
            parsed_response=outcome.get("parsed"),
            error_message=outcome.get("error"),
            usage=TokenUsage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                total_tokens=usage.total_tokens if usage else 0,
            ),
        ),
    )
    path = paths.build(paths.MODEL_LOG, experimentId=site.experiment_id, logId=log_id)
    store.ref(path).set(entry.to_firestore())


def ask(
    site: CallSite,
    prompt: str,
    schema: dict[str, Any],
    validate: Any,
    retries: int = DEFAULT_RETRIES,
) -> Any:
    """Ask until ``validate(parsed_json)`` accepts a reply; each failure goes back as a corrective
    turn. ModelError (configuration, provider) propagates at once; AnswerFailed when attempts run
    out."""
    settings = site.participant.agent_config.model_settings  # type: ignore[union-attr]
    client = client_for(settings.api_type)
    turn = prompt
    last_error = ""
    for attempt in range(1, retries + 2):
        request = ModelRequest(
            prompt=turn,
            response_schema=schema,
            model_name=settings.model_name,
            seed=f"{site.participant.private_id}:{site.stage_id}:{attempt}",
        )
        started = time.perf_counter()
        try:
            reply = client.generate(request)
        except ModelError as error:
            _log(site, request, attempt, started, status=error.status, error=str(error))
            raise
        try:
            parsed = parse_json_reply(reply.text)
            answer = validate(parsed)
        except AnswerValidationError as error:
            last_error = str(error)
            _log(site, request, attempt, started, reply=reply, status="INVALID", error=last_error)
            turn = f"{prompt}\n\n{corrective_turn(last_error)}"
            continue
        _log(site, request, attempt, started, reply=reply, parsed=parsed)
        return answer
    raise AnswerFailed(retries + 1, last_error)
