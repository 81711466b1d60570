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
