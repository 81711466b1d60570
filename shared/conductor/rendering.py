"""Prompts of a conductor workflow: an agent's system and user templates with its prompt
arguments, and the conductor's (default) prompts. All of Jinja2, in the bounded sandbox with
StrictUndefined (shared/prompts/templating.py): an undefined variable is a PromptTemplateError
naming the template and the variable."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from shared.conductor.documents import FINISH, AgentDoc, Step, StepKind
from shared.prompts import render_template, response_format_block

DEFAULT_CONDUCTOR_SYSTEM = """\
You are the conductor of a team of agents. You never answer the user yourself: you pick the agent
that can best move the conversation forward, or finish it when the user's query is answered.
The agents are:
{% for agent in agents %}
- {{ agent.name }}: {{ agent.description }}
{% endfor %}
Pick the agent most suitable to solve the problem at hand, or {{ finish }} with the answer."""

DEFAULT_CONDUCTOR_USER = """\
The user's query: {{ query }}
{% if memory %}
What the agents found so far:
{% for name, value in memory.items() %}
- {{ name }}: {{ value }}
{% endfor %}
{% endif %}
{% if history %}
The conversation so far:
{% for line in history %}
- {{ line }}
{% endfor %}
{% endif %}
Analyse the conversation so far and name the agent that best contributes to its progress next
(next_agent), or {{ finish }} with the final answer (answer) if the query is answered."""


def agent_prompt(
    agent: AgentDoc,
    template_base: str,
    system_args: Mapping[str, Any],
    user_args: Mapping[str, Any],
    query: str,
    schema: dict[str, Any],
    *,
    lenient: bool = False,
    user_text: str | None = None,
) -> str:
    """System prompt, the user's query, the user prompt and the reply format, as one text.
    ``template_base`` names the agent's document in errors; ``lenient``: an undefined variable
    renders empty (a Diskurs project's templates, as Diskurs renders them); ``user_text``: sent
    in place of the user template (Diskurs' ``is_valid`` message on arguments it refuses)."""
    system = render_template(
        agent.system_prompt,
        {"query": query, **system_args},
        f"{template_base}.systemPrompt",
        lenient=lenient,
    )
    user = user_text
    if user is None:
        user = render_template(
            agent.user_prompt,
            {"query": query, **user_args},
            f"{template_base}.userPrompt",
            lenient=lenient,
        )
    parts = [system.strip(), f"The user's query: {query}", user.strip()]
    return "\n\n".join(p for p in parts if p) + "\n" + response_format_block(schema)


def conductor_schema(agents: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "next_agent": {"type": "string", "enum": [*agents, FINISH]},
            "answer": {"type": "string"},
        },
        "required": ["next_agent"],
    }


def history_lines(steps: Sequence[Step]) -> list[str]:
    """One line per finished step, for the conductor's view of the conversation."""
    lines = []
    for step in steps:
        if step.kind == StepKind.CONDUCTOR and step.decision:
            lines.append(f"conductor chose {step.decision.next_agent} ({step.decision.by})")
        elif step.kind in (StepKind.AGENT, StepKind.HUMAN) and step.output is not None:
            final = " and handed back" if step.is_final else ""
            text = json.dumps(step.output, ensure_ascii=False, default=str)
            lines.append(f"{step.agent} replied {text}{final}")
        elif step.kind == StepKind.JOIN and step.output is not None:
            text = json.dumps(step.output, ensure_ascii=False, default=str)
            lines.append(f"{step.agent} joined its branches into {text}")
    return lines


def conductor_prompt(
    system_template: str,
    user_template: str,
    variables: Mapping[str, Any],
    template_base: str,
    schema: dict[str, Any],
) -> str:
    """The conductor's prompt; an empty template is the default one."""
    names = {"finish": FINISH, **variables}
    system = render_template(
        system_template or DEFAULT_CONDUCTOR_SYSTEM, names, f"{template_base}.systemPrompt"
    )
    user = render_template(
        user_template or DEFAULT_CONDUCTOR_USER, names, f"{template_base}.userPrompt"
    )
    return f"{system.strip()}\n\n{user.strip()}\n" + response_format_block(schema)
