"""Prompt items, DL's default prompt configs, schema conversion and the seeded shuffle."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest

from shared.models import DocumentError, PromptConfig, StructuredOutputSchema, parse_document
from shared.models.agent import (
    ChatStructuredOutputConfig,
    PromptItemGroup,
    StageContextPromptItem,
    TextPromptItem,
)
from shared.models.stages import parse_stage
from shared.prompts import (
    default_mediator_prompt,
    default_participant_prompt,
    schema_to_json_schema,
    shuffle_with_seed,
    without_should_respond,
)
from shared.prompts.constants import DEFAULT_AGENT_PARTICIPANT_PROMPT_INSTRUCTIONS
from shared.prompts.display.stocks import format_currency
from shared.prompts.display.survey import answers_about
from shared.prompts.schema import pretty_json

F = json.loads((Path(__file__).parent / "golden" / "prompt_fixture.json").read_text())
STAGES = {s["id"]: parse_stage(s["id"], s) for s in F["stages"]}


def test_schema_conversion_lowercases_requires_every_property_and_keeps_enums_and_items():
    node = StructuredOutputSchema.model_validate(
        {
            "type": "OBJECT",
            "properties": [
                {"name": "s", "schema": {"type": "STRING", "description": "A string"}},
                {
                    "name": "ints",
                    "schema": {"type": "ARRAY", "arrayItems": {"type": "INTEGER"}},
                },
                {"name": "pick", "schema": {"type": "STRING", "enumItems": ["A", "B"]}},
                {"name": "kind", "schema": {"type": "ENUM", "enumItems": ["X", "Y"]}},
                {
                    "name": "nested",
                    "schema": {
                        "type": "OBJECT",
                        "properties": [{"name": "ok", "schema": {"type": "BOOLEAN"}}],
                    },
                },
                {"name": "n", "schema": {"type": "NUMBER"}},
            ],
        }
    )
    schema = schema_to_json_schema(node)
    assert schema == {
        "type": "object",
        "properties": {
            "s": {"description": "A string", "type": "string"},
            "ints": {"type": "array", "items": {"type": "integer"}},
            "pick": {"type": "string", "enum": ["A", "B"]},
            "kind": {"type": "string", "enum": ["X", "Y"]},
            "nested": {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"],
            },
            "n": {"type": "number"},
        },
        "required": ["s", "ints", "pick", "kind", "nested", "n"],
    }
    jsonschema.Draft202012Validator.check_schema(schema)
    valid = {"s": "", "ints": [1], "pick": "A", "kind": "Y", "nested": {"ok": True}, "n": 1.5}
    jsonschema.validate(valid, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**valid, "kind": "Z"}, schema)


def test_schema_conversion_keeps_dl_key_order():
    node = StructuredOutputSchema.model_validate(
        {"type": "ARRAY", "description": "d", "arrayItems": {"type": "STRING"}}
    )
    assert list(schema_to_json_schema(node)) == ["description", "type", "items"]


def test_turn_based_schema_has_no_should_respond():
    node = default_participant_prompt(STAGES["chat"]).structured_output_config
    assert node is not None and node.schema_ is not None
    schema = schema_to_json_schema(node.schema_)
    turns = without_should_respond(schema)
    assert "shouldRespond" in schema["properties"] and "shouldRespond" in schema["required"]
    assert "shouldRespond" not in turns["properties"]
    assert turns["required"] == ["explanation", "response", "readyToEndChat"]
    assert without_should_respond({"type": "array"}) == {"type": "array"}


@pytest.mark.parametrize(
    ("stage_id", "retries", "last_text"),
    [
        ("survey", 3, "Please answer the following survey questions based on the context above."),
        ("surveyPerParticipant", 3, "Based on the context above, please answer each survey"),
        ("ranking", 3, "Please rank the available items or participants based on the context"),
        ("profile", 3, "Please fill out your profile name, emoji, and pronouns."),  # ours: DL has 0
        ("privateChat", 0, "You are participating in a live group chat as your persona."),
    ],
)
def test_participant_defaults_follow_dl(stage_id, retries, last_text):
    config = default_participant_prompt(STAGES[stage_id])
    assert (config.id, config.type, config.num_retries) == (stage_id, stage_id, retries)
    assert config.include_scaffolding_in_prompt
    last = config.prompt[-1]
    assert isinstance(last, TextPromptItem) and last.text.startswith(last_text)
    output = config.structured_output_config
    assert output is not None and output.enabled and output.append_to_prompt
    assert output.type == "JSON_SCHEMA" and output.schema_ is not None


def test_participant_default_item_sequence():
    survey = default_participant_prompt(STAGES["survey"])
    assert [i.type for i in survey.prompt] == [
        "TEXT",
        "TEXT",
        "PROFILE_INFO",
        "PROFILE_CONTEXT",
        "STAGE_CONTEXT",
        "TEXT",
    ]
    assert survey.prompt[0].text == DEFAULT_AGENT_PARTICIPANT_PROMPT_INSTRUCTIONS
    context = survey.prompt[4]
    assert isinstance(context, StageContextPromptItem)
    assert (context.stage_id, context.include_participant_answers) == ("", True)
    chat = default_participant_prompt(STAGES["chat"])
    assert [i.type for i in chat.prompt][-2:] == ["STAGE_CONTEXT", "CHAT_PARTICIPANT_INSTRUCTIONS"]
    assert chat.chat_settings is not None and chat.chat_settings.max_responses == 100
    profile = default_participant_prompt(STAGES["profile"])
    profile_context = profile.prompt[3]
    assert isinstance(profile_context, StageContextPromptItem)
    assert profile_context.stage_id == "profile"  # DL: only the profile stage


def test_survey_default_schemas_follow_the_questions():
    survey = default_participant_prompt(STAGES["survey"]).structured_output_config
    assert survey is not None and survey.schema_ is not None
    schema = schema_to_json_schema(survey.schema_)
    assert schema["required"] == [
        "priority-text",
        "attended-meeting",
        "residence-length",
        "trust-council",
    ]
    assert schema["properties"]["residence-length"]["enum"] == ["lt-2", "2-10", "gt-10"]
    assert schema["properties"]["trust-council"]["type"] == "integer"
    per = default_participant_prompt(STAGES["surveyPerParticipant"]).structured_output_config
    assert per is not None and per.schema_ is not None
    listed = schema_to_json_schema(per.schema_)["properties"]["consider-views"]
    assert listed["type"] == "array"
    assert listed["items"]["required"] == ["participantId", "answer"]


def test_gendered_profile_default_lists_dl_avatars():
    stage = STAGES["profile"].model_copy(update={"profile_type": "DEFAULT_GENDERED"})
    config = default_participant_prompt(stage)
    assert config.structured_output_config is not None
    assert config.structured_output_config.schema_ is not None
    emoji = schema_to_json_schema(config.structured_output_config.schema_)["properties"]["emoji"]
    assert len(emoji["enum"]) == 15 and emoji["enum"][0] == "👩🏻"
    assert "Pick your emoji from this list" in config.prompt[-1].text


def test_kinds_without_a_dl_default_get_context_only():
    config = default_participant_prompt(STAGES["info"])
    assert config.structured_output_config is None
    assert [i.type for i in config.prompt][-1] == "STAGE_CONTEXT"


def test_mediator_defaults():
    chat = default_mediator_prompt(STAGES["chat"])
    assert [i.type for i in chat.prompt] == [
        "TEXT",
        "PROFILE_INFO",
        "PROFILE_CONTEXT",
        "CHAT_MEDIATOR_INSTRUCTIONS",
        "STAGE_CONTEXT",
        "TEXT",
    ]
    assert chat.prompt[4].stage_id == "chat"
    assert chat.num_retries == 0 and chat.chat_settings is not None
    private = default_mediator_prompt(STAGES["privateChat"])
    assert private.type == "privateChat"
    assert private.prompt[-1].text.startswith("You are an agent who is chatting")
    with pytest.raises(ValueError, match="survey"):
        default_mediator_prompt(STAGES["survey"])


def test_defaults_round_trip_through_firestore_documents():
    for stage in STAGES.values():
        config = default_participant_prompt(stage)
        again = PromptConfig.model_validate(config.to_firestore())
        assert again.to_firestore() == config.to_firestore()


def test_unknown_item_type_names_index_and_type():
    document = {
        "id": "s",
        "type": "survey",
        "prompt": [
            {"type": "TEXT", "text": "a"},
            {
                "type": "GROUP",
                "title": "g",
                "items": [{"type": "TEXT", "text": "b"}, {"type": "X"}],
            },
        ],
    }
    with pytest.raises(DocumentError, match=r"prompt item 1\.1 \(X\): unknown prompt item type"):
        parse_document(PromptConfig, "agentParticipants/p/prompts/s", document)
    document["prompt"] = [{"type": "TEXT", "text": "a"}, {"type": "SHOUT"}]
    with pytest.raises(DocumentError, match=r"prompt item 1 \(SHOUT\)"):
        parse_document(PromptConfig, "agentParticipants/p/prompts/s", document)
    document["prompt"] = [{"type": "TEXT"}]
    with pytest.raises(DocumentError, match=r"prompt item 0 \(TEXT\): text: Field required"):
        parse_document(PromptConfig, "agentParticipants/p/prompts/s", document)


def test_items_parse_with_dl_names_and_defaults():
    config = PromptConfig.model_validate(
        {
            "id": "s",
            "type": "chat",
            "prompt": [
                {"type": "STAGE_CONTEXT", "stageId": "x", "includeInfoText": True},
                {"type": "GROUP", "title": "g", "items": []},
            ],
        }
    )
    stage_item, grouped = config.prompt
    assert isinstance(stage_item, StageContextPromptItem)
    assert (stage_item.stage_id, stage_item.include_info_text) == ("x", True)
    assert stage_item.include_primary_text and stage_item.include_participant_answers
    assert isinstance(grouped, PromptItemGroup) and grouped.shuffle_config is None
    assert config.to_firestore()["prompt"][0]["stageId"] == "x"


# Orders computed with DL's random.utils.ts algorithm under Node (md5 seed, LCG, splice).
@pytest.mark.parametrize(
    ("seed", "expected"),
    [
        ("", "dbgecaf"),
        ("seed-1", "egfabcd"),
        ("cohort-xyz", "edfcgab"),
        ("exp::stage::1", "faecbdg"),
        ("ünï", "bdgface"),
    ],
)
def test_shuffle_matches_deliberate_lab(seed, expected):
    assert "".join(shuffle_with_seed(list("abcdefg"), seed)) == expected


def test_chat_prompt_configs_load_with_chat_output_field_names():
    output = {"enabled": True, "messageField": "msg"}
    chat = PromptConfig.model_validate(
        {"id": "c", "type": "chat", "structuredOutputConfig": output}
    )
    assert isinstance(chat.structured_output_config, ChatStructuredOutputConfig)
    assert chat.structured_output_config.message_field == "msg"
    assert chat.structured_output_config.should_respond_field == "shouldRespond"
    survey = PromptConfig.model_validate(
        {"id": "s", "type": "survey", "structuredOutputConfig": {}}
    )
    assert not isinstance(survey.structured_output_config, ChatStructuredOutputConfig)


@pytest.mark.parametrize(
    ("amount", "currency", "expected"),
    [
        (1234.5, "USD", "$1,235"),
        (-110.0, "USD", "-$110"),
        (1234567, "EUR", "1.234.567\u00a0€"),
        (12345678, "INR", "₹1,23,45,678"),
        (99.5, "GBP", "£100"),
        (5, "XYZ", "XYZ 5"),
    ],
)
def test_currency_format_follows_intl(amount, currency, expected):
    assert format_currency(amount, currency) == expected


def test_survey_per_participant_answers_in_either_layout():
    stage = STAGES["surveyPerParticipant"]
    question_first = {
        "consider-views": {"p2": {"id": "consider-views", "kind": "scale", "value": 4}}
    }
    participant_first = {
        "p2": {"consider-views": {"id": "consider-views", "kind": "scale", "value": 4}}
    }
    question = stage.questions[0]
    assert answers_about(question_first, question) == answers_about(participant_first, question)
    assert answers_about(question_first, question)[0][0] == "p2"


def test_the_response_format_prints_json_as_the_standard_library_indents_it() -> None:
    question = {"type": "integer", "minimum": 1, "maximum": 7, "description": "1 = «non», 7 = 🐻"}
    schema = {
        "type": "object",
        "properties": {
            f"q{i}": {"type": "object", "properties": {f"p{n}": question for n in range(50)}}
            for i in range(3)
        },
        "required": ["q0", "q1", "q2"],
        "empty": {"map": {}, "list": [], "text": 'a "quoted"\n\\ \u0001 line'},
        "flags": [True, False, None, -3, 2.5],
    }
    assert pretty_json(schema) == json.dumps(schema, indent=2, ensure_ascii=False)


def test_json_where_python_and_javascript_differ_prints_as_javascript() -> None:
    assert pretty_json({"x": math.inf, "tiny": 1e-05}) == '{\n  "x": null,\n  "tiny": 0.00001\n}'
    huge = {"n": 2**70}  # beyond orjson: the standard library prints it
    assert pretty_json(huge) == json.dumps(huge, indent=2)
