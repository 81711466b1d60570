"""The seed's stock-trading example: NVIDIA's short-term price, as a validated structured
output (justification, position Buy/Short/Wait, asset, projected % change, time horizon,
confidence). The default user functions of a debate."""

from __future__ import annotations

from typing import Any

from shared.debate import kits
from shared.debate.prompts import PromptSet
from shared.stages import AnswerValidationError

NAME = "stock_trading"
POSITIONS = ("Buy", "Short", "Wait")
ASSET = "NVIDIA"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "justification": {"type": "string", "minLength": 20, "maxLength": 800},
        "position": {"type": "string", "enum": list(POSITIONS)},
        "asset": {"type": "string", "enum": [ASSET]},
        "projectedPercentChange": {"type": "number", "minimum": -30, "maximum": 30},
        "timeHorizonHours": {"type": "integer", "minimum": 1, "maximum": 168},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": [
        "justification",
        "position",
        "asset",
        "projectedPercentChange",
        "timeHorizonHours",
        "confidence",
    ],
    "additionalProperties": False,
}

FORMAT = """Justification:
[Your concise, data-grounded argument about NVIDIA's short-term price trajectory. Reference \
specific facts or phrases. Incorporate others' arguments if applicable.]
Position: [Buy / Short / Wait]
Asset: NVIDIA
Projected Percentage Change: [+/-X.X%]
Time Horizon: [X hours]
Confidence: [0.00 to 1.00]
Return it as JSON with the keys justification, position, asset, projectedPercentChange,
timeHorizonHours, confidence."""


@kits.prompts(NAME)
class StockPrompts(PromptSet):
    response_schema = SCHEMA
    entry_field = "data"
    topic = f"{ASSET}'s short-term stock price (trade: Buy, Short or Wait)"
    response_format = FORMAT

    def render(self, formatted: Any) -> str:
        return (
            f"Justification: {formatted['justification']} | Position: {formatted['position']} "
            f"| Asset: {formatted['asset']} | Projected Percentage Change: "
            f"{formatted['projectedPercentChange']:+.1f}% | Time Horizon: "
            f"{formatted['timeHorizonHours']} hours | Confidence: {formatted['confidence']:.2f}"
        )


def _number(reply: dict[str, Any], key: str, low: float, high: float) -> float:
    value = reply.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AnswerValidationError(f"'{key}' must be a number, got {value!r}")
    if not low <= value <= high:
        raise AnswerValidationError(f"'{key}' must be within [{low}, {high}], got {value}")
    return float(value)


@kits.format_agent_response(NAME)
def format_agent_response(reply: Any) -> dict[str, Any]:
    if not isinstance(reply, dict):
        raise AnswerValidationError("the reply must be a JSON object")
    position = reply.get("position")
    if position not in POSITIONS:
        raise AnswerValidationError(f"'position' must be one of {POSITIONS}, got {position!r}")
    justification = reply.get("justification")
    if not isinstance(justification, str) or not justification.strip():
        raise AnswerValidationError("'justification' must be a non-empty text")
    return {
        "justification": justification.strip(),
        "position": position,
        "asset": str(reply.get("asset") or ASSET),
        "projectedPercentChange": round(_number(reply, "projectedPercentChange", -100, 100), 2),
        "timeHorizonHours": int(_number(reply, "timeHorizonHours", 0, 24 * 365)),
        "confidence": round(_number(reply, "confidence", 0, 1), 3),
    }


@kits.draw_final_conclusion(NAME)
def draw_final_conclusion(formatted: dict[str, Any]) -> str:
    return str(formatted["position"])


_DIRECTION = {"Buy": 1.0, "Wait": 0.0, "Short": -1.0}


@kits.compare_responses(NAME)
def compare_responses(a: dict[str, Any], b: dict[str, Any]) -> float:
    """0 (same view) to 1: the positions' direction, the projected change and the confidence."""
    direction = abs(_DIRECTION[a["position"]] - _DIRECTION[b["position"]]) / 2
    change = min(1.0, abs(a["projectedPercentChange"] - b["projectedPercentChange"]) / 20)
    confidence = abs(a["confidence"] - b["confidence"])
    return round(0.5 * direction + 0.3 * change + 0.2 * confidence, 6)
