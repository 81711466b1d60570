"""Ranking stage (items or participants): the reply is the ordered list of ids."""

from __future__ import annotations

from typing import Any

from shared.models import RankingStage, RankingStageAnswer
from shared.stages.base import AnswerContext, AnswerValidationError


def candidates(stage: RankingStage, ctx: AnswerContext) -> list[tuple[str, str]]:
    """(id, label) of what is ranked."""
    if stage.ranking_type == "items":
        return [(item.id, item.text) for item in stage.ranking_items]
    people = [(p.public_id, p.name) for p in ctx.peers]
    if stage.enable_self_voting:
        me = ctx.participant
        people.append((me.public_id, me.display_name + " (you)"))
    return people


class RankingSpec:
    def schema(self, stage: RankingStage, ctx: AnswerContext) -> dict[str, Any]:
        ids = [cid for cid, _ in candidates(stage, ctx)]
        return {
            "type": "array",
            "description": "All ids, most preferred first",
            "items": {"type": "string", "enum": ids},
            "minItems": len(ids),
            "maxItems": len(ids),
            "uniqueItems": True,
        }

    def extract(self, stage: RankingStage, ctx: AnswerContext, reply: Any) -> RankingStageAnswer:
        if isinstance(reply, dict) and isinstance(reply.get("rankingList"), list):
            reply = reply["rankingList"]
        ids = [cid for cid, _ in candidates(stage, ctx)]
        if not isinstance(reply, list) or not all(isinstance(x, str) for x in reply):
            raise AnswerValidationError("the reply must be a JSON array of ids")
        if sorted(reply) != sorted(ids):
            missing = sorted(set(ids) - set(reply))
            extra = sorted(set(reply) - set(ids))
            dupes = sorted({x for x in reply if reply.count(x) > 1})
            raise AnswerValidationError(
                f"the ranking must list each of {ids} exactly once"
                f" (missing {missing}, unknown {extra}, repeated {dupes})"
            )
        return RankingStageAnswer(id=stage.id, ranking_list=list(reply))
