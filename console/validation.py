"""Which pydantic model a document path must satisfy, and the check run before every write.

The backend validates each document it reads with these same models and records an error when
one does not fit; checking in the console first means a typo is caught before any agent trips on
it. Paths without a model (stage answers, trigger logs, ...) are written as given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from shared import paths
from shared.conductor import checks as workflow_checks
from shared.conductor.documents import Conversation, Step
from shared.debate.models import Debate
from shared.models import (
    AgentPersona,
    ChatMessage,
    CohortConfig,
    DocumentError,
    ErrorRecord,
    Experiment,
    ExperimenterData,
    MediatorProfile,
    ModelLogEntry,
    ParticipantProfile,
    PromptConfig,
    parse_document,
    parse_stage,
)
from shared.society import paths as society_paths
from shared.society.models import ActionRecord, Intervention, Society
from shared.society.prompts import SocietyPrompts

Check = Callable[[str, dict[str, Any]], object]


def _model(model: type[BaseModel]) -> Check:
    """Validate as ``model``, taking its id field from the path when the document omits it (the
    backend fills ``privateId`` of a new participant itself, so a minimal document is valid)."""
    id_field = "privateId" if "private_id" in model.model_fields else "id"

    def check(path: str, data: dict[str, Any]) -> object:
        with_id = {id_field: path.rsplit("/", 1)[-1], **data}
        return parse_document(model, path, with_id)

    return check


def _stage(path: str, data: dict[str, Any]) -> object:
    return parse_stage(path, {"id": path.rsplit("/", 1)[-1], **data})


CHECKS: dict[str, Check] = {
    paths.EXPERIMENT: _model(Experiment),
    paths.STAGE: _stage,
    paths.PARTICIPANT: _model(ParticipantProfile),
    paths.COHORT: _model(CohortConfig),
    paths.CHAT: _model(ChatMessage),
    paths.PRIVATE_CHAT: _model(ChatMessage),
    paths.AGENT_PARTICIPANT_PERSONA: _model(AgentPersona),
    paths.AGENT_MEDIATOR_PERSONA: _model(AgentPersona),
    paths.AGENT_PARTICIPANT_PROMPT: _model(PromptConfig),
    paths.AGENT_MEDIATOR_PROMPT: _model(PromptConfig),
    paths.MEDIATOR: _model(MediatorProfile),
    paths.MODEL_LOG: _model(ModelLogEntry),
    paths.ERROR_RECORD: _model(ErrorRecord),
    paths.EXPERIMENTER_DATA: _model(ExperimenterData),
    society_paths.SOCIETY: _model(Society),
    society_paths.INTERVENTION: _model(Intervention),
    society_paths.PROMPTS: _model(SocietyPrompts),
    society_paths.ACTION: _model(ActionRecord),
    paths.DEBATE: _model(Debate),
    paths.WORKFLOW: workflow_checks.parse_workflow,  # unknown keys, templates, rule targets
    paths.WORKFLOW_AGENT: workflow_checks.parse_agent,
    paths.CONVERSATION: _model(Conversation),
    paths.CONVERSATION_STEP: _model(Step),
}
"""Path pattern → check; add a row when a new document kind gets a model."""


def model_for(path: str) -> str | None:
    """The pattern whose model checks ``path``, or None."""
    return next((pattern for pattern in CHECKS if paths.match(pattern, path) is not None), None)


def validate(path: str, data: Any) -> DocumentError | None:
    """None if ``data`` may be written at ``path``, else the error (document, field, reason)."""
    if not isinstance(data, dict):
        return DocumentError(path, "(document)", "a document must be a JSON object")
    pattern = model_for(path)
    if pattern is None:
        return None
    try:
        CHECKS[pattern](path, data)
    except DocumentError as error:
        return error
    return None
