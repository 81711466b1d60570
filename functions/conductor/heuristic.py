"""A heuristic agent's step: code. Its ``heuristic_sequence(conversation, call_tool,
llm_client)`` (a Diskurs project's, async or not) gets the step as Diskurs' own Conversation
(its fresh arguments, the long-term memory) and returns the conversation whose prompt argument
is the turn's result; then its turn ends (one step), as Diskurs' heuristic agent's does. Its
``llm_client`` (``use_as_tool``, ``generate``) asks the agent's model, each call recorded as the
step's tool calls are."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from diskurs.entities import ChatMessage, MessageType, Role

from functions import work
from functions.conductor import calling, toolbox, workflow
from functions.conductor.completion import Completion
from functions.conductor.turns import Context, after_step
from shared.conductor import arguments, diskurs_view
from shared.conductor.documents import AgentDoc, step_id
from shared.conductor.prompt_args import PromptValidationError
from shared.llm.tools import Tool, tool_from_function
from shared.models import DocumentError

MODEL_TOOL = "llm_client_use_as_tool"
"""The name a heuristic's model call is recorded under, among its step's tool calls."""
_TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


class StepModel:
    """Diskurs' ``LLMClient`` for a heuristic sequence: the agent's model (its ``llm``, else
    the workflow's). Each ``use_as_tool`` call is recorded as one of the step's tool calls (its
    prompt, content and reply), so a redelivered step gets the recorded reply back instead of
    asking again. The reply is asked as JSON ``{"text": ...}`` (the backbone's structured
    call), its text returned."""

    def __init__(self, tools: Any) -> None:
        self.tools = tools

    async def use_as_tool(self, prompt: str, content: str) -> str:
        return str(await self.tools.call_tool(MODEL_TOOL, {"prompt": prompt, "content": content}))

    async def generate(
        self, conversation: Any, tools: Any = None, message_type: Any = MessageType.CONVERSATION
    ) -> Any:
        """Diskurs' ``generate``: the conversation's system prompt, chat (of ``message_type``)
        and user prompt asked of the model; returned with the user prompt and the model's reply
        appended to its chat, as Diskurs returns it. Asked through ``use_as_tool`` (the system
        prompt its prompt, the messages its content), so recorded the same way."""
        if tools:
            raise NotImplementedError(
                "llm_client.generate with tools is not supported here: call the tools with "
                "call_tool (docs/DISKURS.md)"
            )
        system, messages = _transcript(conversation.render_chat(message_type=message_type))
        text = await self.use_as_tool(system, messages)
        asked = conversation.user_prompt
        asked = [] if asked is None else asked if isinstance(asked, list) else [asked]
        name = asked[0].name if asked else conversation.active_agent
        reply = ChatMessage(role=Role.ASSISTANT, content=text, name=name, type=message_type)
        return conversation.append([*asked, reply])

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _transcript(rendered: list[Any]) -> tuple[str, str]:
    """Diskurs' rendered chat as a prompt: the system messages, and the others one a paragraph
    (``role (name): content``; a list, several tool responses, flattened as Diskurs does)."""
    flat = [m for entry in rendered for m in (entry if isinstance(entry, list) else [entry])]
    system = [str(m.content) for m in flat if m.role == Role.SYSTEM and m.content]
    others = [
        f"{m.role.value}{f' ({m.name})' if m.name else ''}: {m.content}"
        for m in flat
        if m.role != Role.SYSTEM and m.content
    ]
    return "\n\n".join(system), "\n\n".join(others)


def model_tool(ctx: Context, agent: AgentDoc) -> Tool:
    """The agent's model as a tool of its step (``StepModel``)."""
    settings = agent.model_settings or ctx.wf.model_settings

    def llm_client_use_as_tool(prompt: str, content: str) -> str:
        """
        The agent's model asked to process content (Diskurs' LLMClient.use_as_tool).

        :param prompt: How to process the content.
        :param content: The content.
        """
        return str(
            calling.ask_step(
                ctx.cid, step_id(ctx.step.index), agent.name, settings, f"{prompt}\n\n{content}",
                _TEXT, _text, agent.max_attempts, log_collection=ctx.log,
            )
        )  # fmt: skip

    return tool_from_function(llm_client_use_as_tool)


def _text(parsed: Any) -> str:
    if not isinstance(parsed, dict) or not isinstance(parsed.get("text"), str):
        raise PromptValidationError('reply with a JSON object {"text": "..."}')
    return str(parsed["text"])


def _run(sequence: Callable[..., Any], conversation: Any, call_tool: Any, model: Any) -> Any:
    """The sequence's result, awaited when it is a coroutine (Diskurs' are async)."""
    found = sequence(conversation=conversation, call_tool=call_tool, llm_client=model)
    if inspect.isawaitable(found):
        return asyncio.run(_awaited(found))
    return found


async def _awaited(found: Any) -> Any:
    return await found


def heuristic(ctx: Context) -> Completion:
    wid = ctx.conv.workflow_id
    agent = workflow.read_agent(wid, ctx.step.agent)
    code = workflow.agent_code(wid, agent)
    doc = workflow.agent_path(wid, agent.name)
    sequence = getattr(code.module, agent.heuristic_sequence_name, None)
    if not callable(sequence):
        reason = f"{agent.code_filename} has no function {agent.heuristic_sequence_name!r}"
        raise DocumentError(doc, "heuristicSequenceName", reason)
    view = diskurs_view.conversation(
        conversation_id=ctx.cid,
        query=ctx.conv.query,
        agent=agent.name,
        prompt_argument=arguments.load(code.user, ctx.step.input),
        longterm_memory=ctx.longterm_memory(),
        metadata=ctx.conv.metadata,
    )
    name = workflow.code_name(agent, agent.heuristic_sequence_name)
    model = {MODEL_TOOL: model_tool(ctx, agent)}
    tools = toolbox.step_tools(ctx, agent, model)  # each call recorded: redelivered, none again
    call_tool = tools.call_tool if agent.tools and tools is not None else None
    result = work.user_code(name, _run, sequence, view, call_tool, StepModel(tools))
    found = getattr(result, "prompt_argument", None)
    output = dict(ctx.step.input) if found is None else arguments.dump(found)
    return after_step(ctx, agent, code.user, output, final=True)
