"""A model with a fixed latency: the fake OpenAI-compatible server of the tests, answering
schema-valid JSON after ``latency_s``, reached by agents whose apiType is OPENAI.

The replies come from the scripted model's value generator, seeded per request, so the agents
behave as on the scripted model (chat: speak with odds 0.8) and only the latency differs;
``always_respond`` makes every chat reply speak, for the latency measurement.

``reading_model`` answers at once and reads: a debate statement's position follows the
evidence in its prompt (``read_position``), for decisions that can be right or wrong.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator

from bench.stack import env
from shared.llm.scripted import generate_value
from tests.fakes import Recorded, Step, slow
from tests.fakes import fake_openai as openai

API_TYPE = "OPENAI"


class _Responder:
    def __init__(self, latency_s: float, seed: int, always_respond: bool) -> None:
        self.latency_s = latency_s
        self.seed = seed
        self.always_respond = always_respond
        self._requests = itertools.count()

    def __call__(self, request: Recorded) -> Step:
        body = request.body if isinstance(request.body, dict) else {}
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        rng = random.Random(f"{self.seed}:{digest}:{next(self._requests)}")
        if schema is None:
            reply = generate_value(rng, {"type": "string", "minLength": 20, "maxLength": 160})
        else:
            value = generate_value(rng, schema)
            if self.always_respond and isinstance(value, dict) and "shouldRespond" in value:
                value["shouldRespond"] = True
            reply = json.dumps(value)
        return slow(openai.text(reply), self.latency_s)


SIGNALS = {"bullish": "Buy", "bearish": "Short"}
"""Words in a data entry that a reading model takes as evidence for a position."""
_STATED = re.compile(r"\| Position: (Buy|Short|Wait) \|")
"""A statement in the debate memory (``stock_trading``'s rendering) stating its position."""


def read_position(prompt: str) -> str:
    """The position a literal reader of ``prompt`` takes: one vote per signal word in its data
    and per position stated in the debate memory; the most votes win, a tie is Wait."""
    votes: Counter[str] = Counter(_STATED.findall(prompt))
    for word, position in SIGNALS.items():
        votes[position] += len(re.findall(rf"\b{word}\b", prompt))
    ranked = votes.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return "Wait"
    return ranked[0][0]


class _Reader:
    """Stock-trading statements whose position follows what the prompt says (``read_position``),
    the other fields seeded by the request body, so a debate's decision depends on how its
    structure carries the data's evidence up: the bench's fixed cases have a known answer."""

    def __call__(self, request: Recorded) -> Step:
        body = request.body if isinstance(request.body, dict) else {}
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        value = generate_value(random.Random(digest), schema or {"type": "string"})
        if isinstance(value, dict) and "position" in value:
            prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
            value["position"] = read_position(prompt)
        return openai.text(json.dumps(value) if schema else str(value))


def fake_model(
    latency_s: float, seed: int = 0, always_respond: bool = False
) -> contextlib.AbstractContextManager[openai.FakeOpenAI]:
    """The fake server answering after ``latency_s``, for the block."""
    return _serving(_Responder(latency_s, seed, always_respond))


def reading_model() -> contextlib.AbstractContextManager[openai.FakeOpenAI]:
    """The fake server answering at once with ``_Reader``'s statements, for the block."""
    return _serving(_Reader())


@contextlib.contextmanager
def _serving(responder: Callable[[Recorded], Step]) -> Iterator[openai.FakeOpenAI]:
    """The fake server, with the environment pointing OPENAI agents at it (and the scripted
    override off) for the block."""
    with openai.FakeOpenAI() as fake:
        fake.responder = responder
        with env(
            **{
                "DLAB_MODEL_OVERRIDE": None,
                "OPENAI_BASE_URL": fake.base_url,
                "OPENAI_API_KEY": "bench-key",
            }
        ):
            yield fake


@contextlib.contextmanager
def scripted_model() -> Iterator[None]:
    """Every agent on the offline scripted model (no model latency)."""
    with env(**{"DLAB_MODEL_OVERRIDE": "SCRIPTED"}):
        yield
