"""Info, terms of service, role, profile and ranking displays."""

from __future__ import annotations

import json

from shared.models import InfoStage, ProfileStage, ProfileType, RankingStage, RoleStage, TosStage
from shared.prompts.context import MAX_NAME_SHOWN, bounded, display_name, profile_set_id
from shared.prompts.display.view import StageView


def info(stage: InfoStage, view: StageView) -> str:
    return "\n".join(stage.info_lines)


def tos(stage: TosStage, view: StageView) -> str:
    return "\n".join(stage.tos_lines)


def role(stage: RoleStage, view: StageView) -> str:
    """Each shown participant's assigned role (public data participantMap) and its lines."""
    assigned = view.public(stage.id).get("participantMap") or {}
    roles = {r.id: r for r in stage.roles}
    lines = []
    for participant in view.participants:
        found = roles.get(assigned.get(participant.public_id, ""))
        if found:
            name = display_name(participant, profile_set_id(stage.id))
            who = f"{name} ({participant.public_id})"
            text = "\n\n".join(found.display_lines)
            lines.append(f"Role of {who}: {found.name}\n{text}".rstrip())
    return "\n".join(lines)


_PROFILE_TYPES = {
    ProfileType.DEFAULT: (
        "Participants set their own profile: a name, an emoji avatar and pronouns."
    ),
    ProfileType.DEFAULT_GENDERED: (
        "Participants set their own profile: a name, an emoji avatar from a given list and "
        "pronouns."
    ),
    ProfileType.ANONYMOUS_ANIMAL: "Participants are assigned an anonymous animal profile.",
    ProfileType.ANONYMOUS_PARTICIPANT: "Participants are assigned an anonymous profile.",
}


def profile(stage: ProfileStage, view: StageView) -> str:
    """How profiles are set here, then the shown participants' profiles once set."""
    lines = [_PROFILE_TYPES.get(ProfileType(stage.profile_type), "")]
    for participant in view.participants:
        if participant.name:
            shown = display_name(participant, profile_set_id(stage.id), pronouns=True)
            lines.append(f"* Participant {participant.public_id}'s profile: {shown}")
    return "\n".join(line for line in lines if line)


def ranking(stage: RankingStage, view: StageView) -> str:
    """The candidates as JSON (DL's format), then each shown participant's ranking."""
    items: list[dict[str, str | None]]
    if stage.ranking_type == "items":
        items = [{"id": i.id, "text": i.text} for i in stage.ranking_items]
        head = "Items available in ranking stage: "
    else:
        items = [
            {"id": p.public_id, "name": p.name and bounded(p.name, MAX_NAME_SHOWN)}
            for p in view.ctx.participants
            if stage.enable_self_voting or not view.is_self(p)
        ]
        head = "Participants available in ranking stage: "
    lines = [head + json.dumps(items, ensure_ascii=False, separators=(",", ":"))]
    for participant, answer in view.answers(stage.id):
        ranked = answer.get("rankingList")
        if isinstance(ranked, list):
            name = view.answer_name(participant, stage.id)
            lines.append(
                f"{name} ({participant.public_id})'s ranking: {','.join(map(str, ranked))}"
            )
    return "\n".join(lines)
