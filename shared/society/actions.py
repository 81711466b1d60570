"""The nine actions of the seed, with its pydantic shapes and bounds, and the reply schema.

``recipient_agent_id`` is bounded by the society's size (the seed's ``le=100`` for 100 agents).
A reply that does not fit is an AnswerValidationError with the exact reason, which the model
call sends back as a corrective turn.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from shared.stages.base import AnswerValidationError

ACTION_KINDS = (
    "forum_post",
    "forum_reply",
    "direct_message",
    "create_proposal",
    "vote",
    "work",
    "trade",
    "set_name",
    "idle",
)
SCHEMA_TITLE = "SocietyAction"


class _Action(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _ToAgent(_Action):
    recipient_agent_id: int = Field(..., ge=1)

    @field_validator("recipient_agent_id")
    @classmethod
    def _within_society(cls, value: int, info: ValidationInfo) -> int:
        agents = (info.context or {}).get("agents", 100)
        if value > agents:
            raise ValueError(f"must be an agent id from 1 to {agents}")
        return value


class ForumPostAction(_Action):
    action: Literal["forum_post"]
    content: str = Field(..., min_length=1, max_length=2000)


class ForumReplyAction(_Action):
    action: Literal["forum_reply"]
    parent_message_id: int
    content: str = Field(..., min_length=1, max_length=2000)


class DirectMessageAction(_ToAgent):
    action: Literal["direct_message"]
    content: str = Field(..., min_length=1, max_length=2000)


class CreateProposalAction(_Action):
    action: Literal["create_proposal"]
    title: str = Field(..., min_length=1, max_length=200)
    description: str = Field(..., max_length=5000)
    proposal_type: Literal["law", "allocation", "rule", "infrastructure", "other"]


class VoteAction(_Action):
    action: Literal["vote"]
    proposal_id: int
    vote: Literal["yes", "no", "abstain"]
    reasoning: str | None = Field(default=None, max_length=2000)


class WorkAction(_Action):
    action: Literal["work"]
    work_type: Literal["farm", "generate", "gather"]
    hours: int = Field(..., ge=1, le=8)


class TradeAction(_ToAgent):
    action: Literal["trade"]
    resource_type: Literal["food", "energy", "materials"]
    amount: float = Field(..., gt=0, le=1e9)


class SetNameAction(_Action):
    action: Literal["set_name"]
    display_name: str = Field(..., min_length=1, max_length=50)


class IdleAction(_Action):
    action: Literal["idle"]
    reasoning: str | None = Field(default=None, max_length=2000)


Action = Annotated[
    ForumPostAction
    | ForumReplyAction
    | DirectMessageAction
    | CreateProposalAction
    | VoteAction
    | WorkAction
    | TradeAction
    | SetNameAction
    | IdleAction,
    Field(discriminator="action"),
]
_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)


def _reason(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"][1:]) or "action"
    if first["type"] == "union_tag_invalid" or first["loc"] == ("action",):
        return f"'action' must be one of {', '.join(ACTION_KINDS)}"
    if first["type"] == "union_tag_not_found":
        return "the reply has no 'action' field"
    got = first.get("input")
    shown = "" if first["type"] == "missing" else f" (got {str(got)[:80]!r})"
    return f"field '{where}': {first['msg']}{shown}"


def parse_action(data: Any, agents: int) -> Action:
    """The action in a reply (a JSON object), or AnswerValidationError saying what is wrong."""
    if not isinstance(data, dict):
        raise AnswerValidationError(
            f"the reply must be one JSON object with an 'action' field, not {type(data).__name__}"
        )
    try:
        return _ADAPTER.validate_python(data, context={"agents": agents})
    except ValidationError as error:
        raise AnswerValidationError(_reason(error)) from None


def action_dict(action: Action) -> dict[str, Any]:
    return action.model_dump(exclude_none=True)


def reply_schema(agents: int) -> dict[str, Any]:
    """The reply's JSON Schema, sent natively to providers that take one: one flat object (every
    provider's structured output accepts it); the per-action shape is checked by parse_action."""
    text = {"type": "string", "maxLength": 2000}
    agent = {"type": "integer", "minimum": 1, "maximum": agents}
    return {
        "title": SCHEMA_TITLE,
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTION_KINDS)},
            "content": text,
            "parent_message_id": {"type": "integer"},
            "recipient_agent_id": agent,
            "title": {"type": "string", "maxLength": 200},
            "description": {"type": "string", "maxLength": 5000},
            "proposal_type": {
                "type": "string",
                "enum": ["law", "allocation", "rule", "infrastructure", "other"],
            },
            "proposal_id": {"type": "integer"},
            "vote": {"type": "string", "enum": ["yes", "no", "abstain"]},
            "reasoning": text,
            "work_type": {"type": "string", "enum": ["farm", "generate", "gather"]},
            "hours": {"type": "integer", "minimum": 1, "maximum": 8},
            "resource_type": {"type": "string", "enum": ["food", "energy", "materials"]},
            "amount": {"type": "number", "exclusiveMinimum": 0},
            "display_name": {"type": "string", "maxLength": 50},
        },
        "required": ["action"],
    }
