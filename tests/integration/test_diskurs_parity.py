"""One small project run twice against the same fake OpenAI-compatible server: by the installed
``diskurs`` 0.0.79 (its own forum, its own OpenAI client reaching the fake through
``OPENAI_BASE_URL``) and by this backend on the emulators (through ``tools.diskurs_forum``, the
project's ``main.py`` with one import changed). The final results, and the model calls, agree.

The project, in Diskurs 0.0.79's form: a conductor (Diskurs' packaged prompts) routes by the
model to a multi-step reader whose ``is_valid`` refuses the first reply; the reader's output
fields reach the memory, the conductor's ``can_finalize(memory)`` holds and ``finalize(memory)``
is the result. Diskurs' OpenAI client asks tiktoken for the model's tokenizer, a file it
downloads; offline, the test gives it a word splitter (token counts only trim long contexts)."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

import diskurs
import diskurs.llm_client
import pytest
from conductor_state import conversation

from shared.conductor.documents import Status
from tests.fakes import Recorded, Step
from tests.fakes import fake_openai as openai
from tools import diskurs_forum

pytestmark = pytest.mark.usefixtures("clean")

QUERY = "I'm in oslo and I feel calm."
FILES = {
    "config.yml": """
        firstContact: boss
        dispatcherType: asynchronous
        toolExecutorType: default
        longtermMemory: {type: ReaderMemory, location: memory.py}
        llms:
          - {name: main, type: openai, modelName: gpt-4o, apiKey: k, modelMaxTokens: 2048}
        agents:
          - name: boss
            type: conductor
            llm: main
            prompt: {type: conductor_prompt, location: boss, failName: fail}
            topics: [reader]
            maxDispatches: 5
          - name: reader
            type: multistep
            llm: main
            prompt: {type: multistep_prompt, location: reader, promptArgumentClass: ReaderPrompt}
            topics: [boss]
    """,
    "memory.py": """
        from dataclasses import dataclass
        from diskurs import LongtermMemory


        @dataclass
        class ReaderMemory(LongtermMemory):
            city: str = ""
            mood: str = ""
    """,
    "boss/prompt.py": """
        def can_finalize(memory):
            return bool(memory.city)


        def finalize(memory):
            return {"city": memory.city, "mood": memory.mood, "query": memory.user_query}


        def fail(memory):
            return {"error": "no city"}
    """,
    "boss/agent_description.txt": "routes",
    "reader/prompt.py": """
        from dataclasses import dataclass
        from diskurs import OutputField, PromptArgument, PromptValidationError


        @dataclass
        class ReaderPrompt(PromptArgument):
            city: OutputField[str] = ""
            mood: OutputField[str] = ""


        def is_valid(arg):
            if arg.city and arg.city != arg.city.title():
                raise PromptValidationError("Write the city's name capitalised")
            return True
    """,
    "reader/system_template.jinja2": "You read messages.",
    "reader/user_template.jinja2": "Where is the user, and how do they feel?",
    "reader/agent_description.txt": "reads where the user is and how they feel",
}


def _project(folder: Path) -> Path:
    for name, text in FILES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return folder


def _respond(request: Recorded) -> Step:
    """The same answers for both: the conductor's request gets the reader; the reader's first
    reply has the city in lower case, its corrected one capitalised."""
    sent = json.dumps(request.body)
    if "You read messages." not in sent:
        return openai.text(json.dumps({"next_agent": "reader"}))
    city = "Oslo" if "capitalised" in sent else "oslo"
    return openai.text(json.dumps({"city": city, "mood": "calm"}))


class _Words:
    """A tokenizer for Diskurs' client, offline (tiktoken downloads its files)."""

    def encode(self, text: str) -> list[str]:
        return text.split(" ")

    def decode(self, tokens: list[str]) -> str:
        return " ".join(tokens)


def _kinds(requests: list[Recorded]) -> list[str]:
    return [
        "reader" if "You read messages." in json.dumps(r.body) else "conductor" for r in requests
    ]


def test_diskurs_and_this_backend_agree_on_a_small_project(runtime, db, monkeypatch, tmp_path):
    project = _project(tmp_path / "parity")
    monkeypatch.setattr(diskurs.llm_client.tiktoken, "encoding_for_model", lambda model: _Words())
    with openai.FakeOpenAI() as fake:
        fake.responder = _respond
        for name, value in {
            "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_API_KEY": "k",
            "DLAB_MODEL_OVERRIDE": "",
            "DLAB_WORKFLOW_DIRS": str(tmp_path),
        }.items():
            monkeypatch.setenv(name, value)
        given: dict[str, Any] = {"user_query": QUERY, "conversation_id": "parity1"}

        forum = diskurs.create_forum_from_config(config_path=Path("config.yml"), base_path=project)
        theirs = asyncio.run(forum.ama(diskurs.DiskursInput(**given)))
        their_calls = _kinds(fake.requests)
        fake.requests.clear()

        ours_forum = diskurs_forum.create_forum_from_config(
            config_path=Path("config.yml"), base_path=project, client=db
        )
        ours = asyncio.run(ours_forum.ama(diskurs_forum.DiskursInput(**given)))
        our_calls = _kinds(fake.requests)

    assert theirs == {"city": "Oslo", "mood": "calm", "query": QUERY}
    assert ours == theirs
    assert their_calls == ["conductor", "reader", "reader"]
    assert our_calls == their_calls
    assert conversation(db, "parity1").status == Status.DONE


HEADER = """
    firstContact: %s
    dispatcherType: asynchronous
    toolExecutorType: default
    longtermMemory: {type: DeskMemory, location: memory.py}
    llms:
      - {name: main, type: openai, modelName: gpt-4o, apiKey: k, modelMaxTokens: 2048}
    agents:
"""
HEURISTIC = """
      - name: %s
        type: heuristic
        prompt: {type: heuristic_prompt, location: %s, promptArgumentClass: Arg,
                 heuristicSequenceName: heuristic_sequence}
        topics: [%s]
"""
CONDUCTOR = """
      - name: %s
        type: conductor
        llm: main
        prompt: {type: conductor_prompt, location: %s, canFinalizeName: ready, failName: fail}
        topics: [%s]
        rules:
          - {name: r, description: x, location: %s, conditionName: route, targetAgent: %s}
"""
NEXT_RULE = """\
          - {name: s, description: x, location: team, conditionName: later, targetAgent: answerer}
"""
MEMORY = """
    from dataclasses import dataclass, field
    from diskurs import LongtermMemory


    @dataclass
    class DeskMemory(LongtermMemory):
        items: list[str] = field(default_factory=list)
        tag: str = ""
        answer: str = ""
"""
SETS = """
    from dataclasses import dataclass, field
    from diskurs import InputField, OutputField, PromptArgument


    @dataclass
    class Arg(PromptArgument):
        items: InputField[list[str]] = field(default_factory=list)
        %s: OutputField[%s] = %s


    async def heuristic_sequence(conversation, call_tool, llm_client):
        arg = conversation.prompt_argument
        arg.%s = %s
        return conversation.update(prompt_argument=arg)
"""
ENDS = """
    def ready(memory):
        return %s


    def finalize(memory):
        return {"items": memory.items, "tag": memory.tag, "answer": memory.answer}


    def fail(memory):
        return {"error": "failed"}
"""
RULES = """
    def route(conversation):
        return %s


    def later(conversation):
        return bool(conversation.longterm_memory.items)
"""
READER = SETS % ("items", "list[str]", "field(default_factory=list)", "items", '["a", "b"]')
TAGGER = SETS % ("tag", "str", '""', "tag", '"tagged " + ",".join(arg.items)')
ANSWERER = SETS % ("answer", "str", '""', "answer", '"answered " + ",".join(arg.items)')
TOPICS = {
    "config.yml": HEADER % "reader"
    + HEURISTIC % ("reader", "reader", "tagger, boss")
    + HEURISTIC % ("tagger", "tagger", "")
    + CONDUCTOR % ("boss", "boss", "tagger", "boss", "tagger"),
    "memory.py": MEMORY,
    "reader/prompt.py": READER,
    "tagger/prompt.py": TAGGER,
    "boss/prompt.py": ENDS % "True",
    "boss/rules.py": RULES % "True",
}
NESTED = {
    "config.yml": HEADER % "boss"
    + CONDUCTOR % ("boss", "boss", "team", "boss", "team")
    + CONDUCTOR % ("team", "team", "reader, answerer", "team", "reader")
    + NEXT_RULE
    + "        supervisor: boss\n"
    + HEURISTIC % ("reader", "reader", "team")
    + HEURISTIC % ("answerer", "answerer", "team"),
    "memory.py": MEMORY,
    "reader/prompt.py": READER,
    "answerer/prompt.py": ANSWERER,
    "boss/prompt.py": ENDS % "bool(memory.answer)",
    "boss/rules.py": RULES % "True",
    "team/prompt.py": ENDS % "bool(memory.answer)",
    "team/rules.py": RULES % "not conversation.longterm_memory.items",
}


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (TOPICS, {"items": ["a", "b"], "tag": "", "answer": ""}),
        (NESTED, {"items": ["a", "b"], "tag": "", "answer": "answered a,b"}),
    ],
    ids=["several_topics", "nested_conductors"],
)
def test_diskurs_and_this_backend_agree_on_topics_and_nesting(
    runtime, db, monkeypatch, tmp_path, files, expected
):
    """Without a model: an agent publishing to two topics (the tagger's chain first, whose
    memory change the conductor after it does not see), and a conductor nested in another that
    hands back through its supervisor. Diskurs 0.0.79 and this backend give the same result."""
    project = tmp_path / "project"
    for name, text in files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    for agent in ("boss", "team", "reader", "tagger", "answerer"):
        (project / agent).mkdir(exist_ok=True)
        (project / agent / "agent_description.txt").write_text(f"{agent} does its part")
    monkeypatch.setattr(diskurs.llm_client.tiktoken, "encoding_for_model", lambda model: _Words())
    for name, value in {"OPENAI_API_KEY": "k", "DLAB_WORKFLOW_DIRS": str(tmp_path)}.items():
        monkeypatch.setenv(name, value)
    given = diskurs.DiskursInput(user_query=QUERY)
    forum = diskurs.create_forum_from_config(config_path=Path("config.yml"), base_path=project)
    theirs = asyncio.run(forum.ama(given))
    ours_forum = diskurs_forum.create_forum_from_config(
        config_path=Path("config.yml"), base_path=project, client=db
    )
    ours = asyncio.run(ours_forum.ama(diskurs_forum.DiskursInput(user_query=QUERY)))
    assert theirs == expected
    assert ours == theirs


STORED = {
    "config.yml": """
        firstContact: boss
        dispatcherType: asynchronous
        toolExecutorType: default
        longtermMemory: {type: DeskMemory, location: memory.py}
        conversationStore: {type: filesystem, isPersistent: true}
        llms:
          - {name: main, type: openai, modelName: gpt-4o, apiKey: k, modelMaxTokens: 2048}
        agents:
          - name: boss
            type: conductor
            llm: main
            prompt: {type: conductor_prompt, location: boss, canFinalizeName: ready,
                     failName: fail}
            topics: [reader]
            finalizerName: closer
            rules:
              - {name: r, description: x, location: boss, conditionName: route,
                 targetAgent: reader}
          - name: reader
            type: heuristic
            prompt: {type: heuristic_prompt, location: reader, promptArgumentClass: Arg,
                     heuristicSequenceName: heuristic_sequence}
            topics: [boss]
          - name: closer
            type: heuristic_finalizer
            renderPrompt: false
            prompt: {type: heuristic_prompt, location: closer, promptArgumentClass: Closing,
                     heuristicSequenceName: heuristic_sequence}
            finalProperties: [closing]
    """,
    "memory.py": MEMORY,
    "boss/prompt.py": ENDS % "bool(memory.items)",
    "boss/rules.py": RULES % "True",
    "reader/prompt.py": READER,
    "closer/prompt.py": """
        from dataclasses import dataclass
        from diskurs import PromptArgument


        @dataclass
        class Closing(PromptArgument):
            closing: str = ""


        async def heuristic_sequence(conversation, call_tool, llm_client):
            memory = conversation.longterm_memory
            arg = conversation.prompt_argument
            arg.closing = memory.user_query + " / " + ",".join(memory.items)
            return conversation.update(prompt_argument=arg)
    """,
}


def test_diskurs_and_this_backend_agree_on_a_stored_conversation(
    runtime, db, monkeypatch, tmp_path
):
    """Diskurs' conversation store: the finalizer persists the conversation of a
    ``conversation_id``; ``ama`` with that id again starts from it (the memory, its first
    query included), so the conductor finalizes at once. The same results from both."""
    project = tmp_path / "stored"
    for name, text in STORED.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    for agent in ("boss", "reader", "closer"):
        (project / agent / "agent_description.txt").write_text(f"{agent} does its part")
    monkeypatch.setattr(diskurs.llm_client.tiktoken, "encoding_for_model", lambda model: _Words())
    for name, value in {"OPENAI_API_KEY": "k", "DLAB_WORKFLOW_DIRS": str(tmp_path)}.items():
        monkeypatch.setenv(name, value)
    forum = diskurs.create_forum_from_config(config_path=Path("config.yml"), base_path=project)
    ours_forum = diskurs_forum.create_forum_from_config(
        config_path=Path("config.yml"), base_path=project, client=db
    )
    results = []
    for run in (forum, ours_forum):
        for query in (QUERY, "And now?"):
            given = {"user_query": query, "conversation_id": "kept1"}
            made = diskurs.DiskursInput if run is forum else diskurs_forum.DiskursInput
            results.append(asyncio.run(run.ama(made(**given))))  # type: ignore[attr-defined]
    stored = {"closing": f"{QUERY} / a,b"}  # the second: the first query, from the store
    assert results == [stored] * 4
    assert (project / "conversations" / "kept1.json").is_file()  # Diskurs' own store
    assert conversation(db, "kept1-2").status == Status.DONE
