"""Template variables in the stage texts a prompt shows (DL's resolveTemplateVariablesInStage):
descriptions for every kind, info lines, survey question texts, stock ids."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.models import (
    AssetAllocationStage,
    InfoStage,
    MultipleChoiceQuestion,
    ScaleQuestion,
    StageConfig,
    StockInfoStage,
    SurveyPerParticipantStage,
    SurveyStage,
)
from shared.prompts.templating import render_template


def _question(question: Any, where: str, variables: Mapping[str, Any]) -> Any:
    def render(text: str, field: str) -> str:
        return render_template(text, variables, f"{where}.{field}")

    update: dict[str, Any] = {"question_title": render(question.question_title, "questionTitle")}
    if isinstance(question, MultipleChoiceQuestion):
        update["options"] = [
            o.model_copy(update={"text": render(o.text, f"options[{i}].text")})
            for i, o in enumerate(question.options)
        ]
    elif isinstance(question, ScaleQuestion):
        update["lower_text"] = render(question.lower_text, "lowerText")
        update["upper_text"] = render(question.upper_text, "upperText")
        if question.middle_text:
            update["middle_text"] = render(question.middle_text, "middleText")
    return question.model_copy(update=update)


def resolve_stage_text(stage: StageConfig, variables: Mapping[str, Any]) -> StageConfig:
    """A copy of ``stage`` with its templated texts rendered; the stage itself is unchanged."""
    where = f"stage '{stage.id}'"

    def render(text: str, field: str) -> str:
        return render_template(text, variables, f"{where} {field}")

    d = stage.descriptions
    update: dict[str, Any] = {
        "descriptions": d.model_copy(
            update={
                "primary_text": render(d.primary_text, "descriptions.primaryText"),
                "info_text": render(d.info_text, "descriptions.infoText"),
            }
        )
    }
    if isinstance(stage, InfoStage):
        update["info_lines"] = [
            render(line, f"infoLines[{i}]") for i, line in enumerate(stage.info_lines)
        ]
    elif isinstance(stage, SurveyStage | SurveyPerParticipantStage):
        update["questions"] = [
            _question(q, f"{where} questions[{i}]", variables)
            for i, q in enumerate(stage.questions)
        ]
    elif isinstance(stage, AssetAllocationStage):
        config = dict(stage.stock_config)
        for key in ("stockAId", "stockBId"):
            if isinstance(config.get(key), str):
                config[key] = render(config[key], f"stockConfig.{key}")
        update["stock_config"] = config
    elif isinstance(stage, StockInfoStage):
        visible = (stage.model_extra or {}).get("visibleStockIds")
        if isinstance(visible, list):
            update["visibleStockIds"] = [
                render(str(v), f"visibleStockIds[{i}]") for i, v in enumerate(visible)
            ]
    return stage.model_copy(update=update)
