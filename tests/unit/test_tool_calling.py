"""Provider-native tool calling: the specs built from Diskurs-style tool functions, one call run
(a raising tool's error goes back to the model), and each provider's client through a full tool
round (the model calls, the results go back, the model answers) against a local fake speaking
that provider's tool-call protocol, which refuses what the real API refuses."""

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from diskurs import tool

from shared.llm.base import (
    Credentials,
    Message,
    ModelClient,
    ModelError,
    ModelReply,
    ModelRequest,
    ToolCall,
)
from shared.llm.claude import ClaudeClient
from shared.llm.gemini import GeminiClient
from shared.llm.openai_compat import OpenAICompatClient
from shared.llm.scripted import ScriptedModel
from shared.llm.tools import Tool, run_tool, tool_from_function
from tests.fakes import FakeServer, Step
from tests.fakes import fake_anthropic as anthropic
from tests.fakes import fake_gemini as gemini
from tests.fakes import fake_openai as openai

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}


@tool
def forecast(city: str, days: int = 3, user: str = "") -> dict[str, Any]:
    """
    The weather forecast for a city.

    :param city: The city's name,
        as people write it.
    :param days: How many days ahead.
    :param user: Who asks. [invisible]
    :return: The forecast.
    """
    return {"city": city, "days": days, "asked_by": user, "sky": "clear"}


def broken(code: str) -> str:
    """
    Looks up a code; always fails.

    :param code: The code.
    """
    raise RuntimeError(f"no such code {code}")


TOOLS: dict[str, Tool] = {t.spec.name: t for t in map(tool_from_function, (forecast, broken))}


# --- specs and runs ------------------------------------------------------------------------------


def test_a_diskurs_tool_becomes_a_spec_without_its_invisible_argument() -> None:
    spec = TOOLS["forecast"].spec
    assert spec.description == "The weather forecast for a city.\nReturns: The forecast."
    assert spec.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city's name, as people write it."},
            "days": {"type": "integer", "description": "How many days ahead."},
        },
        "required": ["city"],
    }
    assert TOOLS["forecast"].hidden == ("user",)


def test_a_plain_function_is_read_from_its_docstring_and_signature() -> None:
    spec = TOOLS["broken"].spec
    assert spec.description == "Looks up a code; always fails."
    assert spec.parameters["properties"] == {"code": {"type": "string", "description": "The code."}}
    assert spec.parameters["required"] == ["code"]


def test_a_call_runs_with_its_invisible_argument_from_the_context() -> None:
    result = run_tool(TOOLS, ToolCall("c1", "forecast", {"city": "Oslo"}), {"user": "ann"})
    assert not result.is_error
    assert json.loads(result.content) == {
        "city": "Oslo",
        "days": 3,
        "asked_by": "ann",
        "sky": "clear",
    }
    assert result.call_id == "c1"


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (ToolCall("c", "broken", {"code": "X1"}), "no such code X1"),
        (ToolCall("c", "nowhere", {}), "Tool 'nowhere' not found."),
        (ToolCall("c", "forecast", {"town": "Oslo"}), "unexpected keyword argument 'town'"),
        (ToolCall("c", "forecast", {}, malformed="arguments are not a JSON object: {"), "{"),
    ],
)
def test_a_failing_call_is_an_error_result_in_diskurs_words(call: ToolCall, error: str) -> None:
    result = run_tool(TOOLS, call)
    assert result.is_error
    assert result.content.startswith(f"ERROR: Tool '{call.name}' execution failed: ")
    assert error in result.content
    assert result.content.endswith(". Please correct your input and try again.")


def test_the_scripted_model_calls_a_tool_then_answers() -> None:
    specs = tuple(t.spec for t in TOOLS.values())
    request = ModelRequest("Q?", SCHEMA, "scripted", "seed:1", tools=specs)
    first = ScriptedModel().generate(request)
    assert len(first.tool_calls) == 1
    call = first.tool_calls[0]
    assert call.name in TOOLS
    required = TOOLS[call.name].spec.parameters["required"]
    assert set(required) <= set(call.arguments)
    result = run_tool(TOOLS, call)
    history = (
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "", tool_results=(result,)),
    )
    second = ScriptedModel().generate(
        ModelRequest("Q?", SCHEMA, "scripted", "seed:2", history=history, tools=specs)
    )
    assert not second.tool_calls
    assert isinstance(json.loads(second.text)["answer"], str)


# --- each provider through a tool round ---------------------------------------------------------


class Provider:
    def __init__(
        self,
        fake: Callable[[], FakeServer],
        client: ModelClient,
        model: str,
        calls: Callable[..., Step],
        answer: Callable[[str], Step],
        base: Callable[[Any], str],
    ) -> None:
        self.fake, self.client, self.model = fake, client, model
        self.calls, self.answer, self.base = calls, answer, base


PROVIDERS = {
    "openai": Provider(
        openai.FakeOpenAI,
        OpenAICompatClient(),
        "gpt-5-mini",
        openai.tool_calls,
        openai.text,
        lambda f: f.base_url,
    ),
    "claude": Provider(
        anthropic.FakeAnthropic,
        ClaudeClient(),
        "claude-haiku-4-5",
        anthropic.tool_uses,
        lambda t: anthropic.tool_use(json.loads(t)),
        lambda f: f.base_url,
    ),
    "gemini": Provider(
        gemini.FakeGemini,
        GeminiClient(),
        "gemini-2.5-flash",
        gemini.function_calls,
        gemini.text,
        lambda f: f.url,
    ),
}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> Iterator[tuple[Provider, FakeServer]]:
    chosen = PROVIDERS[request.param]
    with chosen.fake() as fake:
        yield chosen, fake


def _request(provider: Provider, fake: FakeServer, history: tuple[Message, ...] = ()) -> Any:
    return ModelRequest(
        prompt="What is the weather in Oslo? Answer as JSON.",
        response_schema=SCHEMA,
        model_name=provider.model,
        seed="s",
        credentials=Credentials(api_key="k", base_url=provider.base(fake)),
        timeout_s=5.0,
        history=history,
        tools=tuple(t.spec for t in TOOLS.values()),
    )


def _round(reply: ModelReply) -> tuple[Message, ...]:
    results = tuple(run_tool(TOOLS, c, {"user": "ann"}) for c in reply.tool_calls)
    return (
        Message("assistant", reply.text, tool_calls=reply.tool_calls),
        Message("tool", "", tool_results=results),
    )


def test_a_tool_round_trip_over_the_providers_protocol(
    provider: tuple[Provider, FakeServer],
) -> None:
    chosen, fake = provider
    fake.push(
        chosen.calls(("forecast", {"city": "Oslo"}), ("broken", {"code": "Z"})),
        chosen.answer('{"answer": "clear skies"}'),
    )
    first = chosen.client.generate(_request(chosen, fake))
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("forecast", {"city": "Oslo"}),
        ("broken", {"code": "Z"}),
    ]
    offered = json.dumps(fake.requests[0].body)
    assert "forecast" in offered and "The city's name" in offered
    assert "Who asks" not in offered  # the invisible argument is not offered
    history = _round(first)
    second = chosen.client.generate(_request(chosen, fake, history))
    assert not second.tool_calls
    assert json.loads(second.text) == {"answer": "clear skies"}
    sent = json.dumps(fake.requests[1].body)
    assert "clear" in sent and "asked_by" in sent  # the forecast's result went back
    assert "no such code Z" in sent and "Please correct your input" in sent  # the error too


def test_a_history_that_leaves_a_call_unanswered_is_refused_as_by_the_real_api(
    provider: tuple[Provider, FakeServer],
) -> None:
    chosen, fake = provider
    fake.push(chosen.calls(("forecast", {"city": "Oslo"}), ("broken", {"code": "Z"})))
    first = chosen.client.generate(_request(chosen, fake))
    asked, results = _round(first)
    one_result = Message("tool", "", tool_results=results.tool_results[:1])
    with pytest.raises(ModelError) as raised:
        chosen.client.generate(_request(chosen, fake, (asked, one_result)))
    assert raised.value.http_status == 400


def _second_request(name: str, calls: Step) -> Any:
    """The body of the request that sends the results of ``calls`` back."""
    provider = PROVIDERS[name]
    with provider.fake() as fake:
        fake.push(calls)
        first = provider.client.generate(_request(provider, fake))
        provider.client.generate(_request(provider, fake, _round(first)))
    return fake.requests[1].body


def test_openai_sends_tools_and_calls_in_its_own_shapes() -> None:
    body = _second_request(
        "openai", openai.tool_calls(("forecast", {"city": "Oslo"}), ids=("call_A",))
    )
    assert body["tools"][0]["type"] == "function"
    assert body["tools"][0]["function"]["name"] == "forecast"
    assistant, result = body["messages"][1:3]
    assert assistant["tool_calls"][0]["id"] == "call_A"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"city": "Oslo"}
    assert result["role"] == "tool" and result["tool_call_id"] == "call_A"


def test_claude_offers_the_tools_beside_the_answer_tool_without_forcing_either() -> None:
    body = _second_request("claude", anthropic.tool_uses(("forecast", {"city": "Oslo"})))
    assert [t["name"] for t in body["tools"]] == ["response", "forecast", "broken"]
    assert body["tool_choice"] == {"type": "any"}
    result = body["messages"][2]
    assert result["role"] == "user"
    assert result["content"][0]["type"] == "tool_result"
    assert result["content"][0]["tool_use_id"] == "toolu_fake0"


def test_gemini_before_3_gets_no_json_type_with_tools_and_its_signature_back() -> None:
    body = _second_request("gemini", gemini.function_calls(("forecast", {"city": "Oslo"})))
    assert "responseMimeType" not in body.get("generationConfig", {})
    declared = body["tools"][0]["functionDeclarations"][0]
    schema = declared.get("parametersJsonSchema") or declared.get("parameters_json_schema")
    assert declared["name"] == "forecast" and schema["required"] == ["city"]
    call_turn, response_turn = body["contents"][1:3]
    assert call_turn["parts"][0]["thoughtSignature"] == "c2lnbmF0dXJl" * 4
    assert response_turn["parts"][0]["functionResponse"]["name"] == "forecast"
    assert "output" in response_turn["parts"][0]["functionResponse"]["response"]


def test_gemini_3_keeps_the_json_schema_with_tools() -> None:
    provider = PROVIDERS["gemini"]
    with gemini.FakeGemini() as fake:
        request = _request(provider, fake)
        request = ModelRequest(**{**request.__dict__, "model_name": "gemini-3-flash"})
        provider.client.generate(request)
    assert fake.requests[0].body["generationConfig"]["responseMimeType"] == "application/json"


def test_the_scripted_tool_call_is_reproducible() -> None:
    specs = tuple(t.spec for t in TOOLS.values())
    request = ModelRequest("Q?", SCHEMA, "scripted", "seed:7", tools=specs)
    calls = [ScriptedModel().generate(request).tool_calls for _ in range(3)]
    assert calls[0] and calls[0] == calls[1] == calls[2]
