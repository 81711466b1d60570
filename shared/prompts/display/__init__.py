"""Stage displays for prompts (DL's getStageDisplayForPrompt per kind): what a participant sees
at a stage, as text. Kinds without a display show only their name and descriptions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared.models import StageConfig, StageKind
from shared.prompts.display import chat, simple, stocks, survey
from shared.prompts.display.view import StageView

DISPLAYS: dict[str, Callable[[Any, StageView], str]] = {
    StageKind.TOS: simple.tos,
    StageKind.INFO: simple.info,
    StageKind.PROFILE: simple.profile,
    StageKind.ROLE: simple.role,
    StageKind.RANKING: simple.ranking,
    StageKind.CHAT: chat.group_chat,
    StageKind.PRIVATE_CHAT: chat.private_chat,
    StageKind.STOCKINFO: stocks.stock_info,
    StageKind.ASSET_ALLOCATION: stocks.asset_allocation,
    StageKind.SURVEY: survey.survey,
    StageKind.SURVEY_PER_PARTICIPANT: survey.survey_per_participant,
}


def stage_display(stage: StageConfig, view: StageView) -> str:
    display = DISPLAYS.get(stage.kind)
    return display(stage, view) if display else ""


__all__ = ["DISPLAYS", "StageView", "stage_display"]
