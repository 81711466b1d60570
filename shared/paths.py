"""Firestore path patterns (Deliberate Lab layout) and builders for concrete paths.

Patterns use Eventarc syntax (``{name}`` is one segment). The function registry refers to these
constants, so every path pattern is written once.
"""

from __future__ import annotations

EXPERIMENT = "experiments/{experimentId}"
STAGE = EXPERIMENT + "/stages/{stageId}"
PARTICIPANT = EXPERIMENT + "/participants/{participantId}"
STAGE_DATA = PARTICIPANT + "/stageData/{stageId}"
PRIVATE_CHAT = STAGE_DATA + "/privateChats/{chatId}"
COHORT = EXPERIMENT + "/cohorts/{cohortId}"
PUBLIC_STAGE_DATA = COHORT + "/publicStageData/{stageId}"
CHAT = PUBLIC_STAGE_DATA + "/chats/{chatId}"
TRIGGER_LOG = PUBLIC_STAGE_DATA + "/triggerLogs/{logId}"
AGENT_PARTICIPANT_PERSONA = EXPERIMENT + "/agentParticipants/{personaId}"
AGENT_PARTICIPANT_PROMPT = AGENT_PARTICIPANT_PERSONA + "/prompts/{stageId}"
AGENT_MEDIATOR_PERSONA = EXPERIMENT + "/agentMediators/{personaId}"
AGENT_MEDIATOR_PROMPT = AGENT_MEDIATOR_PERSONA + "/prompts/{stageId}"
MEDIATOR = EXPERIMENT + "/mediators/{mediatorId}"
MODEL_LOG = EXPERIMENT + "/logs/{logId}"
ERROR_RECORD = EXPERIMENT + "/errors/{errorId}"
MOVE_LEASE = EXPERIMENT + "/moveLeases/{participantId}"
EXPERIMENTER_DATA = "experimenterData/{experimenterId}"
# The agent society (shared/society/paths.py has the rest of its documents).
SOCIETY = "societies/{societyId}"
SOCIETY_ACTION = SOCIETY + "/days/{day}/actions/{actionId}"

DEBATE = "debates/{debateId}"
DEBATE_AGENT = DEBATE + "/agents/{agentId}"
DEBATE_LAYER = DEBATE + "/layers/{layerId}"
DEBATE_CLUSTER = DEBATE + "/clusters/{clusterId}"
DEBATE_ROUND = DEBATE + "/rounds/{roundId}"
DEBATE_STATEMENT = DEBATE + "/statements/{statementId}"
DEBATE_LOG = DEBATE + "/logs/{logId}"
DEBATE_ERROR = DEBATE + "/errors/{errorId}"
DEBATE_LEASE = DEBATE + "/leases/{leaseId}"
DEBATE_DIFFERENCES = DEBATE + "/differences/{layerId}"

# Conductor workflows (shared/conductor)
WORKFLOW = "workflows/{workflowId}"
WORKFLOW_AGENT = WORKFLOW + "/agents/{agentName}"
CONVERSATION = "conversations/{conversationId}"
CONVERSATION_STEP = CONVERSATION + "/steps/{stepId}"
HUMAN_ANSWER = CONVERSATION + "/humanAnswers/{stepId}"


def build(pattern: str, **params: str) -> str:
    """Fill a pattern; every placeholder must be given a non-empty id without slashes."""
    for name, value in params.items():
        if not value or "/" in value:
            raise ValueError(f"invalid id for {name}: {value!r}")
    return pattern.format(**params)


def collection_of(pattern: str, **params: str) -> str:
    """The collection path of a document pattern (the pattern without its last segment)."""
    return build(pattern.rsplit("/", 1)[0], **params)


def match(pattern: str, path: str) -> dict[str, str] | None:
    """Path parameters of ``path`` if it matches ``pattern`` segment by segment, else None."""
    want = pattern.split("/")
    got = path.strip("/").split("/")
    if len(want) != len(got):
        return None
    params: dict[str, str] = {}
    for w, g in zip(want, got, strict=True):
        if w.startswith("{") and w.endswith("}"):
            params[w[1:-1]] = g
        elif w != g:
            return None
    return params


FIRESTORE_ID_BYTES = 1500


def id_problem(value: object, max_bytes: int = FIRESTORE_ID_BYTES) -> str | None:
    """Why ``value`` cannot be a document id (Firestore's rules: a non-empty string of at most
    1,500 bytes, no ``/``, not ``.`` or ``..``, not ``__…__``), or None when it can."""
    if not isinstance(value, str):
        return "Expected string"
    if not value:
        return "must not be empty"
    if "/" in value:
        return "must not contain '/'"
    if value in (".", ".."):
        return "must not be '.' or '..'"
    if value.startswith("__") and value.endswith("__"):
        return "must not start and end with '__' (reserved)"
    if len(value.encode()) > max_bytes:
        return f"must be at most {max_bytes} bytes"
    return None
