"""The conductor's pure parts: memory merge by field name, routing rules, prompt arguments and
rendering (sandboxed, StrictUndefined)."""

from __future__ import annotations

import pytest

from shared.conductor import memory, rendering
from shared.conductor.documents import AgentDoc, Remembered, RoutingRule
from shared.conductor.prompt_args import PromptArgument, PromptValidationError, hinted, parse_reply
from shared.prompts import PromptTemplateError


class Args(PromptArgument):
    name: str = ""
    topic: str = hinted("", enum=["proxy", "firewall"])
    count: int = 0


def test_memory_takes_matching_fields_and_keeps_provenance():
    kept = {"name": Remembered(value="Dana", agent="extractor", turn=1, step=1)}
    merged = memory.merge(
        kept,
        ["name", "topic", "answer"],
        {"name": "Dana", "topic": "proxy", "answer": "", "other": "x"},
        agent="answerer",
        turn=2,
        step=3,
    )
    assert merged["name"].agent == "extractor"  # unchanged value: first setter kept
    assert (merged["topic"].value, merged["topic"].agent, merged["topic"].turn) == (
        "proxy",
        "answerer",
        2,
    )
    assert "answer" not in merged and "other" not in merged
    assert memory.initial_arguments({"name": "", "count": 0}, merged) == {
        "name": "Dana",
        "count": 0,
    }


def test_routing_rules_match_on_memory():
    assert RoutingRule(when_missing=["topic"], then="x").matches({"topic": ""})
    assert not RoutingRule(when_missing=["topic"], then="x").matches({"topic": "proxy"})
    assert RoutingRule(when_present=["answer"], then="FINISH").matches({"answer": "yes"})
    assert RoutingRule(then="x").matches({})


def test_a_reply_is_parsed_syntactically_with_named_fields():
    assert parse_reply(Args, {"name": "A", "topic": "proxy", "count": 2}).count == 2
    with pytest.raises(PromptValidationError, match="field 'count'"):
        parse_reply(Args, {"count": "many"})
    with pytest.raises(PromptValidationError, match="JSON object"):
        parse_reply(Args, ["not", "an", "object"])
    schema = Args.reply_schema(known={"name": "Dana"})
    assert schema["properties"]["topic"]["enum"] == ["proxy", "firewall"]
    assert schema["properties"]["name"]["default"] == "Dana"
    assert schema["required"] == ["count", "name", "topic"]


def _agent(user_prompt: str) -> AgentDoc:
    return AgentDoc(
        name="a",
        system_prompt="Expert in {{ topic }}.",
        user_prompt=user_prompt,
        module="workflows.example.extractor.prompt",
    )


def test_templates_render_conditionally_and_undefined_names_are_errors():
    template = "{% if not name %}Extract the name.{% else %}Hello {{ name }}.{% endif %}"
    text = rendering.agent_prompt(
        _agent(template), "doc", {"topic": "proxies"}, {"name": ""}, "q?", {"type": "object"}
    )
    assert "Expert in proxies." in text and "Extract the name." in text
    text = rendering.agent_prompt(
        _agent(template), "doc", {"topic": "x"}, {"name": "Dana"}, "q?", {"type": "object"}
    )
    assert "Hello Dana." in text
    with pytest.raises(PromptTemplateError, match=r"doc\.userPrompt: undefined variable 'nmae'"):
        rendering.agent_prompt(_agent("{{ nmae }}"), "doc", {"topic": "x"}, {"name": ""}, "q", {})
    with pytest.raises(PromptTemplateError, match=r"sandbox|unsafe|attribute"):
        rendering.agent_prompt(
            _agent("{{ ''.__class__.__mro__ }}"), "doc", {"topic": "x"}, {}, "q", {}
        )


def test_the_default_conductor_prompt_lists_the_agents():
    text = rendering.conductor_prompt(
        "",
        "",
        {
            "agents": [{"name": "extractor", "description": "Extracts."}],
            "query": "q?",
            "memory": {"topic": "proxy"},
            "history": ["extractor replied {}"],
        },
        "workflows/w.conductor",
        rendering.conductor_schema(["extractor"]),
    )
    assert "- extractor: Extracts." in text and "- topic: proxy" in text
    assert '"FINISH"' in text
