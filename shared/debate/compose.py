"""A statement's prompt: the agent's system part, the instruction (with the debate memory),
the response format. Pure, so the benchmark builds exactly the prompts the triggers send."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shared.debate.models import DebateAgent, Role, StatementKind
from shared.debate.prompts import Memory, PromptSet, format_memory


def system_part(
    prompts: PromptSet, agent: DebateAgent, all_data: Sequence[Mapping[str, Any]]
) -> str:
    if agent.role == Role.HEAD:
        return prompts.head_system(agent.name, agent.represented_agents, agent.entries, "")
    if not agent.dynamic:
        return prompts.static_system(agent.name, agent.personality, all_data)
    entries = list(agent.entries) if agent.entries else [all_data[i] for i in agent.entry_indexes]
    return prompts.leaf_system(agent.name, agent.category or "all", entries)


def statement_prompt(
    prompts: PromptSet,
    agent: DebateAgent,
    kind: StatementKind,
    memory: Memory,
    all_data: Sequence[Mapping[str, Any]],
) -> str:
    if kind == StatementKind.OPENING:
        instruction = prompts.opening()
    elif kind == StatementKind.HEAD_OPENING:  # the kit's ``synthesis`` prompt asks for it
        instruction = prompts.synthesis(format_memory(memory))
    else:
        instruction = prompts.argument(format_memory(memory))
    return "\n\n".join(
        (system_part(prompts, agent, all_data), instruction, prompts.final_instruction())
    )
