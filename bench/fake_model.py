"""A model with a fixed latency: the fake OpenAI-compatible server of the tests, answering
schema-valid JSON after ``latency_s``, reached by agents whose apiType is OPENAI.

The replies come from the scripted model's value generator, seeded per request, so the agents
behave as on the scripted model (chat: speak with odds 0.8) and only the latency differs;
``always_respond`` makes every chat reply speak, for the latency measurement.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import random
from collections.abc import Iterator

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


@contextlib.contextmanager
def fake_model(
    latency_s: float, seed: int = 0, always_respond: bool = False
) -> Iterator[openai.FakeOpenAI]:
    """The fake server, with the environment pointing OPENAI agents at it (and the scripted
    override off) for the block."""
    with openai.FakeOpenAI() as fake:
        fake.responder = _Responder(latency_s, seed, always_respond)
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
