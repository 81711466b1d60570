"""render_prompt on one small experiment with every stage kind: golden prompts per kind (set
UPDATE_GOLDEN=1 to rewrite them), each kind's display content, item order, scaffolding, stage
context ranges, seeded groups, chat instruction variants and Jinja variables."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from shared.models import (
    ChatMessage,
    CohortConfig,
    Experiment,
    MediatorProfile,
    ParticipantProfile,
    PromptConfig,
    parse_stage,
)
from shared.prompts import (
    PromptContext,
    PromptError,
    PromptTemplateError,
    default_mediator_prompt,
    default_participant_prompt,
    render_prompt,
    schema_to_json_schema,
)
from shared.prompts.constants import (
    CHAT_PROMPT_TRANSCRIPT_EXPLANATION,
    DEFAULT_AGENT_PARTICIPANT_CHAT_PROMPT,
    DEFAULT_AGENT_PARTICIPANT_CHAT_TURN_TAKING_PROMPT,
    DEFAULT_MEDIATOR_GROUP_CHAT_PROMPT_INSTRUCTIONS,
    DEFAULT_MEDIATOR_GROUP_CHAT_TURN_TAKING_PROMPT_INSTRUCTIONS,
)

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
F = json.loads((GOLDEN / "prompt_fixture.json").read_text())
EXPERIMENT = Experiment.model_validate(F["experiment"])
STAGES = {s["id"]: parse_stage(f"stages/{s['id']}", s) for s in F["stages"]}
ANN = "cat-red-0001"
CURRENT = "\n--- Current stage ---\n"


def make_ctx(stage_id: str, *, mediator: bool = False, **overrides: Any) -> PromptContext:
    """The context at ``stage_id``: answers only for earlier stages; no profile before it is set."""
    earlier = set(EXPERIMENT.stage_ids[: EXPERIMENT.stage_ids.index(stage_id)])
    ann = ParticipantProfile.model_validate(F["agent"])
    if "profile" not in earlier:
        ann = ann.model_copy(update={"name": None, "avatar": None, "pronouns": None})
    others = [ParticipantProfile.model_validate(o) for o in F["others"]]
    answers: dict[str, Any]
    if mediator:
        agent: ParticipantProfile | MediatorProfile = MediatorProfile.model_validate(F["mediator"])
        answers = {
            pid: {s: a for s, a in per.items() if s in earlier} for pid, per in F["answers"].items()
        }
    else:
        agent = ann
        answers = {s: a for s, a in F["answers"][ANN].items() if s in earlier}

    def messages(key: str) -> dict[str, list[ChatMessage]]:
        return {s: [ChatMessage.model_validate(m) for m in ms] for s, ms in F[key].items()}

    fields: dict[str, Any] = {
        "experiment": EXPERIMENT,
        "cohort": CohortConfig.model_validate(F["cohort"]),
        "agent": agent,
        "stage": STAGES[stage_id],
        "stages": STAGES,
        "answers": answers,
        "public_data": F["public_data"],
        "chat_messages": messages("chat_messages"),
        "private_messages": messages("private_messages"),
        "participants": [ann, *others],
    }
    return PromptContext(**{**fields, **overrides})


def render_default(ctx: PromptContext, config: PromptConfig | None = None) -> str:
    if config is None:
        make = default_participant_prompt if ctx.agent_is_participant else default_mediator_prompt
        config = make(ctx.stage)
    output = config.structured_output_config
    schema = schema_to_json_schema(output.schema_) if output and output.schema_ else None
    return render_prompt(config, ctx, schema)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        path.write_text(text)
        return
    assert path.exists(), f"missing golden {path.name}: run with UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{path.name} differs (UPDATE_GOLDEN=1 rewrites it)"


# ---------------------------------------------------------------------------------------------
# Goldens and display content for each stage kind


GOLDEN_CASES = {
    "participant_tos": lambda: make_ctx("tos"),
    "participant_info": lambda: make_ctx("info"),
    "participant_profile": lambda: make_ctx("profile"),
    "participant_survey": lambda: make_ctx("survey"),
    "participant_role": lambda: make_ctx("role"),
    "participant_stockinfo": lambda: make_ctx("stockinfo"),
    "participant_assetAllocation": lambda: make_ctx("assetAllocation"),
    "participant_chat": lambda: make_ctx("chat"),
    "participant_chat_turn_based": lambda: make_ctx("chat", is_turn_based=True),
    "participant_privateChat": lambda: make_ctx("privateChat"),
    "participant_surveyPerParticipant": lambda: make_ctx("surveyPerParticipant"),
    "participant_ranking": lambda: make_ctx("ranking"),
    "participant_transfer": lambda: make_ctx("transfer"),
    "mediator_chat": lambda: make_ctx("chat", mediator=True),
    "mediator_privateChat": lambda: make_ctx(
        "privateChat", mediator=True, context_participant_ids=[ANN]
    ),
}


@pytest.mark.parametrize("name", GOLDEN_CASES)
def test_default_prompt_matches_golden(name):
    check_golden(name, render_default(GOLDEN_CASES[name]()))


CURRENT_STAGE_CONTENT = {
    "tos": ["[Stage: Terms of service]", "Participation is voluntary."],
    "info": ["[Stage: Study overview]", "Maple Creek has **$500,000** of unallocated funds"],
    "profile": [
        "Participants set their own profile: a name, an emoji avatar and pronouns.",
        "Please fill out your profile name, emoji, and pronouns.",
    ],
    "survey": [
        "* How long have you lived in your current community? (Multiple choice: "
        "Less than 2 years (lt-2), 2 to 10 years (2-10), More than 10 years (gt-10))",
        "(Text response: min 10 chars, max 200 chars)",
        "(Scale: 1 = Not at all, 4 = Somewhat, 7 = Completely)",
    ],
    "role": ["Role of 🐱 Ann (cat-red-0001): Resident\nYou are a **resident** of Maple Creek."],
    "stockinfo": [
        "## Stock Information: Riverside Green Bond Fund (RGBF)",
        "Key Information:\n- Best Year Performance: $30\n  3.0% (2024)",
        "- Worst Year Performance: -$110\n  -11.0% (2024)",
        "- Expense ratio: 0.15%\n  Annual management fee",
    ],
    "assetAllocation": [
        "## Asset Allocation: User has $1,000 to allocate between two stocks:\n"
        "* Riverside Green Bond Fund (RGBF)\n* Metro Transit Infrastructure Index (MTII)"
    ],
    "chat": [
        "Participants in chat: 🐱 Ann (she/her), 🐶 Bo (he/him), 🦊 Cy (they/them)",
        CHAT_PROMPT_TRANSCRIPT_EXPLANATION,
        "Discussion thread: Which proposal helps the most residents?\n"
        "(09:00) Ann: I think the playground matters most for families.",
        "(09:02) Facilitator: Thanks both. Cy, what do you think?",
        "(09:07) [SYSTEM]: Bo has left the chat.",
    ],
    "privateChat": [
        "Private chat with Facilitator (med00001)",
        "(10:00) Ann: How long is the rest of the study?",
        "(10:01) Facilitator: About five more minutes.",
    ],
    "surveyPerParticipant": [
        "with each of the following participants in question: Bo (dog-blue-0002), "
        "Cy (fox-gold-0003)",
        "* Briefly describe your impression of this participant. (Text response)",
    ],
    "ranking": ['Items available in ranking stage: [{"id":"park-renovation","text":"Renovate'],
    "transfer": [
        "[Stage: Waiting room]\n* Stage description: Please wait while we find a group for you."
    ],
}


@pytest.mark.parametrize("stage_id", CURRENT_STAGE_CONTENT)
def test_current_stage_section_shows_the_stage_display(stage_id):
    current = render_default(make_ctx(stage_id)).split(CURRENT, 1)[1]
    for expected in CURRENT_STAGE_CONTENT[stage_id]:
        assert expected in current


def test_every_stage_kind_has_a_golden_case():
    kinds = {s.kind for s in STAGES.values()}
    assert kinds == {STAGES[n.split("_")[1]].kind for n in GOLDEN_CASES}


def test_earlier_stages_show_the_agents_answers():
    text = render_default(make_ctx("ranking")).split(CURRENT, 1)[0]
    assert "* Participant 🐱 Ann (she/her)'s answers:\n  * In a sentence or two" in text
    assert "More than 10 years" in text and "5 (Scale: 1 = Not at all" in text
    assert "## Current Asset Allocation:\nParticipant 🐱 Ann (she/her):\n" in text
    assert "    * About dog-blue-0002: 6 (Scale: 1 = Not at all, 7 = A great deal)" in text
    assert "More bus routes." not in text  # another participant's answer


def test_mediator_sees_every_participants_answers_unless_scoped():
    scoped = make_ctx("privateChat", mediator=True, context_participant_ids=[ANN])
    text = render_default(scoped)
    assert "Private chat with Ann (cat-red-0001)" in text
    assert "Safer crossings" in text and "More bus routes." not in text
    config = default_participant_prompt(STAGES["survey"])  # STAGE_CONTEXT('') with answers
    all_answers = render_prompt(config, make_ctx("role", mediator=True))
    assert "Safer crossings" in all_answers and "More bus routes." in all_answers
    assert "--- Current stage ---" not in all_answers  # no stage labels for mediators


# ---------------------------------------------------------------------------------------------
# Assembly


def config_of(*items: dict[str, Any], scaffolding: bool = True, **extra: Any) -> PromptConfig:
    return PromptConfig.model_validate(
        {
            "id": "s",
            "type": "survey",
            "prompt": list(items),
            "includeScaffoldingInPrompt": scaffolding,
            **extra,
        }
    )


def text(value: str) -> dict[str, Any]:
    return {"type": "TEXT", "text": value}


def stage_item(stage_id: str = "", **flags: bool) -> dict[str, Any]:
    return {"type": "STAGE_CONTEXT", "stageId": stage_id, **flags}


def test_items_render_in_order_joined_by_newlines():
    config = config_of(text("one"), {"type": "PROFILE_INFO"}, text("two"), text("three"))
    assert render_prompt(config, make_ctx("survey")) == (
        "one\nAlias: 🐱 Ann\n"
        "This is the display name that others will use to refer to you. It may be a label such "
        "as an animal or object, but you are still a human using this alias.\ntwo\nthree"
    )


def test_scaffolding_off_drops_labels_and_aliases():
    items = (
        {"type": "PROFILE_INFO"},
        {"type": "PROFILE_CONTEXT"},
        stage_item("", includeParticipantAnswers=True),
    )
    on = render_prompt(config_of(*items), make_ctx("survey"))
    off = render_prompt(config_of(*items, scaffolding=False), make_ctx("survey"))
    for marker in (
        "--- Previously completed stages chronologically (read only) ---",
        "--- Current stage ---",
        "[Stage: Community priorities survey]",
        "Alias: ",
        "Private persona context: ",
        "This information is private to you.",
    ):
        assert marker in on
        assert marker not in off
    assert off.startswith(
        "🐱 Ann\nYou are a retired teacher from Maple Creek who cares about parks.\n"
    )
    chat_off = render_prompt(
        config_of(stage_item("chat"), scaffolding=False), make_ctx("privateChat")
    )
    assert "--- Start of chat transcript ---" not in chat_off
    assert f"{CHAT_PROMPT_TRANSCRIPT_EXPLANATION}\n\nDiscussion thread:" in chat_off


def test_empty_stage_id_means_every_stage_so_far():
    rendered = render_prompt(config_of(stage_item("")), make_ctx("role"))
    headers = [line for line in rendered.splitlines() if line.startswith("[Stage: ")]
    assert headers == [
        "[Stage: Terms of service]",
        "[Stage: Study overview]",
        "[Stage: Set profile]",
        "[Stage: Community priorities survey]",
        "[Stage: Role assignment]",
    ]
    assert rendered.index("--- Current stage ---") < rendered.index("[Stage: Role assignment]")
    assert rendered.index("[Stage: Set profile]") < rendered.index("--- Current stage ---")


def test_a_named_stage_shows_only_that_stage_and_its_flags():
    rendered = render_prompt(
        config_of(stage_item("chat", includeInfoText=True, includePrimaryText=False)),
        make_ctx("ranking"),
    )
    assert "[Stage: Group discussion]" in rendered
    assert "* Additional info: Be respectful." in rendered
    assert "* Stage description:" not in rendered
    assert rendered.count("[Stage: ") == 1


def test_answers_only_when_the_item_asks_for_them():
    ctx = make_ctx("ranking")
    shown = render_prompt(config_of(stage_item("survey", includeParticipantAnswers=True)), ctx)
    hidden = render_prompt(config_of(stage_item("survey", includeParticipantAnswers=False)), ctx)
    assert "Safer crossings" in shown and "Safer crossings" not in hidden
    assert "(Multiple choice: Less than 2 years (lt-2)" in hidden
    no_role = render_prompt(config_of(stage_item("role", includeParticipantAnswers=False)), ctx)
    assert "Resident" not in no_role


def test_a_stage_missing_from_the_context_is_a_clear_error():
    ctx = make_ctx("role", stages={k: v for k, v in STAGES.items() if k != "info"})
    with pytest.raises(PromptError, match=r"prompt item 0 \(STAGE_CONTEXT\): stage 'info'"):
        render_prompt(config_of(stage_item("")), ctx)


def group(*items: dict[str, Any], seed: str = "custom", custom: str = "", shuffle: bool = True):
    return {
        "type": "GROUP",
        "title": "options",
        "items": list(items),
        "shuffleConfig": {"shuffle": shuffle, "seed": seed, "customSeed": custom},
    }


LETTERS = [text(letter) for letter in "ABCDEFGH"]


def order(config: PromptConfig, ctx: PromptContext | None = None) -> str:
    return render_prompt(config, ctx or make_ctx("survey")).replace("\n", "")


def test_group_shuffle_is_stable_per_seed_and_differs_across_seeds():
    first = order(config_of(group(*LETTERS, custom="seed-1")))
    assert first == order(config_of(group(*LETTERS, custom="seed-1")))
    assert sorted(first) == list("ABCDEFGH")
    orders = {order(config_of(group(*LETTERS, custom=f"seed-{i}"))) for i in range(6)}
    assert len(orders) > 1
    assert order(config_of(group(*LETTERS, shuffle=False))) == "ABCDEFGH"
    assert "options" not in order(config_of(group(*LETTERS)))  # DL never prints the title


def test_group_seeds_follow_experiment_cohort_and_participant():
    ctx = make_ctx("survey")
    other_cohort = make_ctx("survey", cohort=CohortConfig(id="cohort-2"))
    by_cohort = config_of(group(*LETTERS, seed="cohort"))
    assert order(by_cohort, ctx) == order(by_cohort, make_ctx("survey"))
    assert order(by_cohort, ctx) != order(by_cohort, other_cohort)
    assert order(config_of(group(*LETTERS, seed="cohort")), ctx) == order(
        config_of(group(*LETTERS, custom="cohort-1")), ctx
    )
    assert order(config_of(group(*LETTERS, seed="participant")), ctx) == order(
        config_of(group(*LETTERS, custom=ANN)), ctx
    )
    assert order(config_of(group(*LETTERS, seed="experiment")), ctx) == order(
        config_of(group(*LETTERS, custom="exp-1")), ctx
    )


def test_only_the_first_shuffled_group_keeps_the_bare_seed():
    twice = render_prompt(
        config_of(group(*LETTERS, custom="x"), text("|"), group(*LETTERS, custom="x")),
        make_ctx("survey"),
    ).replace("\n", "")
    first, second = twice.split("|")
    assert first == order(config_of(group(*LETTERS, custom="x")))
    assert second != first  # seed "x::survey::2" (DL's rule), not "x"


def test_chat_instructions_free_form_and_turn_taking():
    participant = config_of({"type": "CHAT_PARTICIPANT_INSTRUCTIONS"})
    mediator = config_of({"type": "CHAT_MEDIATOR_INSTRUCTIONS"})
    free, turns = make_ctx("chat"), make_ctx("chat", is_turn_based=True)
    assert render_prompt(participant, free) == DEFAULT_AGENT_PARTICIPANT_CHAT_PROMPT
    assert render_prompt(participant, turns) == DEFAULT_AGENT_PARTICIPANT_CHAT_TURN_TAKING_PROMPT
    assert render_prompt(mediator, free) == DEFAULT_MEDIATOR_GROUP_CHAT_PROMPT_INSTRUCTIONS
    assert (
        render_prompt(mediator, turns)
        == DEFAULT_MEDIATOR_GROUP_CHAT_TURN_TAKING_PROMPT_INSTRUCTIONS
    )
    assert "decide whether to actually send a message" in DEFAULT_AGENT_PARTICIPANT_CHAT_PROMPT
    assert "It is your turn" in DEFAULT_AGENT_PARTICIPANT_CHAT_TURN_TAKING_PROMPT


def test_turn_based_chat_drops_should_respond_from_the_response_format():
    free = render_default(make_ctx("chat"))
    turns = render_default(make_ctx("chat", is_turn_based=True))
    assert '"shouldRespond"' in free
    assert '"shouldRespond"' not in turns
    assert '"readyToEndChat"' in turns


def test_response_format_only_when_enabled_appended_and_given():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    on = {"enabled": True, "type": "JSON_SCHEMA", "appendToPrompt": True}
    ctx = make_ctx("survey")
    shown = render_prompt(config_of(text("x"), structuredOutputConfig=on), ctx, schema)
    assert shown == (
        "x\n\n--- Response format ---\n"
        "Return only valid JSON, according to the following schema:\n"
        + json.dumps(schema, indent=2)
        + "\n"
    )
    for config in (
        config_of(text("x")),
        config_of(text("x"), structuredOutputConfig={**on, "enabled": False}),
        config_of(text("x"), structuredOutputConfig={**on, "appendToPrompt": False}),
    ):
        assert render_prompt(config, ctx, schema) == "x"
    assert render_prompt(config_of(text("x"), structuredOutputConfig=on), ctx, None) == "x"


def test_profile_info_and_context_for_participants_and_mediators():
    unnamed = render_prompt(config_of({"type": "PROFILE_INFO"}), make_ctx("profile"))
    assert unnamed == "Profile not yet set"
    mediator = make_ctx("chat", mediator=True)
    assert render_prompt(config_of({"type": "PROFILE_INFO"}), mediator) == "Alias: 🤖 Facilitator"
    assert render_prompt(config_of({"type": "PROFILE_CONTEXT"}), mediator) == ""
    with_context = mediator.agent.model_copy(deep=True)
    assert with_context.agent_config is not None
    with_context.agent_config.prompt_context = "Be brief."
    ctx = make_ctx("chat", mediator=True, agent=with_context)
    assert render_prompt(config_of({"type": "PROFILE_CONTEXT"}), ctx) == "Be brief."


def test_conditions_are_kept_on_items():
    config = config_of({"type": "TEXT", "text": "x", "condition": {"type": "group"}})
    assert config.prompt[0].condition == {"type": "group"}
    assert render_prompt(config, make_ctx("survey")) == "x"


# ---------------------------------------------------------------------------------------------
# Jinja


def test_text_without_jinja_renders_unchanged():
    raw = "Braces { like } these, 100% {x}, and a trailing newline\n"
    assert render_prompt(config_of(text(raw)), make_ctx("survey")) == raw


def test_jinja_variables_from_profiles_documents_and_variable_maps():
    template = (
        "{{ participant.name }}/{{ agent.publicId }}/{{ profile.avatar }}/{{ stage.name }}/"
        "{{ cohort.id }}/{{ experiment.id }}/{{ town }}/{{ budget }}"
        "{% if participant.pronouns %} ({{ participant.pronouns }}){% endif %}"
    )
    assert render_prompt(config_of(text(template)), make_ctx("survey")) == (
        "Ann/cat-red-0001/🐱/Community priorities survey/cohort-1/exp-1/Maple Creek/500000"
        " (she/her)"
    )


def test_participant_variables_win_over_cohort_and_experiment():
    ctx = make_ctx("survey")
    agent = ctx.agent.model_copy(update={"variable_map": {"town": "Oak Hill", "budget": "7"}})
    rendered = render_prompt(
        config_of(text("{{ town }} {{ budget }}")), make_ctx("survey", agent=agent)
    )
    assert rendered == "Oak Hill 7"


def test_persona_context_and_stage_texts_are_templates():
    rendered = render_default(make_ctx("survey"))
    assert "You are a retired teacher from Maple Creek who cares about parks." in rendered
    survey = STAGES["survey"].model_copy(
        update={
            "descriptions": STAGES["survey"].descriptions.model_copy(
                update={"primary_text": "Questions about {{ town }}."}
            )
        }
    )
    ctx = make_ctx("survey", stage=survey)
    assert "* Stage description: Questions about Maple Creek." in render_default(ctx)


def test_undefined_variable_is_a_clear_error():
    config = config_of(text("intro"), text("Hello {{ participant.name }} from {{ citty }}"))
    with pytest.raises(PromptTemplateError) as caught:
        render_prompt(config, make_ctx("survey"))
    error = caught.value
    assert (error.template_name, error.variable) == ("prompt item 1 (TEXT)", "citty")
    assert "prompt item 1 (TEXT)" in str(error) and "citty" in str(error)


def test_undefined_attribute_syntax_errors_and_nested_items_are_named():
    nested = config_of(group(text("ok"), text("{{ profile.shoe_size }}"), shuffle=False))
    with pytest.raises(PromptTemplateError, match=r"prompt item 0\.1 \(TEXT\).*shoe_size"):
        render_prompt(nested, make_ctx("survey"))
    with pytest.raises(PromptTemplateError, match=r"prompt item 0 \(TEXT\).*syntax error"):
        render_prompt(config_of(text("{{ oops")), make_ctx("survey"))
    agent = make_ctx("survey").agent.model_copy(deep=True)
    assert agent.agent_config is not None
    agent.agent_config.prompt_context = "{{ persona_name }}"
    with pytest.raises(PromptTemplateError, match=r"promptContext: .*'persona_name'"):
        render_prompt(config_of({"type": "PROFILE_CONTEXT"}), make_ctx("survey", agent=agent))


def test_sandbox_refuses_internals():
    with pytest.raises(PromptTemplateError, match="unsafe"):
        render_prompt(config_of(text("{{ town.__class__.__mro__ }}")), make_ctx("survey"))


def test_participant_is_undefined_for_a_mediator_in_group_chat():
    with pytest.raises(PromptTemplateError) as caught:
        render_prompt(config_of(text("{{ participant.name }}")), make_ctx("chat", mediator=True))
    assert caught.value.variable == "participant"
    scoped = make_ctx("privateChat", mediator=True, context_participant_ids=[ANN])
    assert render_prompt(config_of(text("{{ participant.name }}")), scoped) == "Ann"
