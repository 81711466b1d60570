"""Parallel multi-step agents (Diskurs' ``parallel_multistep``) as durable fan-out and join.

The agent's turn ends as any agent's; then its branch function splits the final prompt
argument into branches. The step's commit creates, in one transaction, a join step and one
``Branch`` document per branch; each branch then runs its own multi-step turn, one agent step
per Pub/Sub message (``conductor-branch``), each a unit of work under its own lease, committed
by a transaction that re-reads the branch (so a duplicate or late delivery does nothing). When
a branch completes, it publishes the join step; the join step runs only once every branch is
done, calls the join function on the branches' outputs, and completes through the conductor's
ordinary step commit: it completes exactly once, however often and in whatever order the
branch and join messages come. A join step run before then re-drives the branches that stand
still, so the conductor's watchdog (which re-drives a pending join step) covers a lost branch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import timedelta
from types import ModuleType
from typing import Any

from functions import store, transactions, work
from functions.conductor import workflow
from functions.conductor.completion import conversation_path
from functions.conductor.settings import conductor_settings
from functions.conductor.wire import ConductorBranch, ConductorStep, publish_branches, publish_steps
from functions.errors import current_function, record_error
from shared import paths
from shared.conductor import arguments
from shared.conductor.branches import (
    Branch,
    JoinInput,
    branch_path,
    branch_unit,
    branches_collection,
)
from shared.conductor.documents import (
    STEP_LEASE,
    AgentDoc,
    Conversation,
    Problem,
    Status,
    Step,
    StepKind,
    StepStatus,
    step_id,
)
from shared.models import DocumentError, now, parse_document

PARALLELIZE = "parallelize.py"
"""The file Diskurs reads a parallel agent's functions from, in its ``location``."""
BRANCH_FUNCTION = "branch_conversation"
JOIN_FUNCTION = "join_conversations"
"""The names Diskurs calls: its forum never passes the configured names on, so these are the
functions a Diskurs project's ``parallelize.py`` really runs."""

# --- the user's parallelize.py -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ParallelCode:
    """An agent's branch and join functions, with the names the records use."""

    module: str
    branch: Callable[[Any], Any]
    join: Callable[[Any], Any]
    branch_name: str = BRANCH_FUNCTION
    join_name: str = JOIN_FUNCTION


def parallel_code(
    module: ModuleType, document: str, branch_name: str = "", join_name: str = ""
) -> ParallelCode:
    """The branch and join functions; one that is missing is a DocumentError naming the field."""
    found: dict[str, Callable[[Any], Any]] = {}
    for field, name in (
        ("branchConversationName", branch_name or BRANCH_FUNCTION),
        ("joinConversationsName", join_name or JOIN_FUNCTION),
    ):
        function = getattr(module, name, None)
        if not callable(function):
            reason = f"{module.__name__} has no function named {name!r}"
            raise DocumentError(document, field, reason)
        found[field] = function
    return ParallelCode(
        module=module.__name__,
        branch=found["branchConversationName"],
        join=found["joinConversationsName"],
        branch_name=branch_name or BRANCH_FUNCTION,
        join_name=join_name or JOIN_FUNCTION,
    )


# --- arguments as Diskurs conversations --------------------------------------------------------


def as_conversation(
    cls: arguments.ArgumentClass, data: dict[str, Any], agent: str, conversation_id: str
) -> Any:
    """What a Diskurs branch or join function takes: a conversation whose prompt argument is
    the step's (Diskurs' own immutable conversation, so ``update`` and the deep copies of
    ``prompt_argument`` behave as the user's code expects)."""
    from diskurs import ImmutableConversation

    return ImmutableConversation(
        prompt_argument=arguments.load(cls, data),
        active_agent=agent,
        conversation_id=conversation_id,
    )


def branch_arguments(
    code: ParallelCode,
    cls: arguments.ArgumentClass,
    output: dict[str, Any],
    agent: str,
    conversation_id: str,
) -> list[dict[str, Any]]:
    """The branch function on the turn's final prompt argument: each branch's argument."""
    name = f"{code.module}.{code.branch_name}"
    conversation = as_conversation(cls, output, agent, conversation_id)
    got = work.user_code(name, code.branch, conversation)
    if not isinstance(got, list | tuple):
        error = TypeError(f"returned {type(got).__name__}, not a list of conversations")
        raise work.UserCodeError(name, error)
    return [arguments.dump(c.prompt_argument) for c in got]


def joined_argument(
    code: ParallelCode,
    cls: arguments.ArgumentClass,
    outputs: list[dict[str, Any]],
    agent: str,
    conversation_id: str,
) -> dict[str, Any]:
    """The join function on the branches' final prompt arguments (in branch order)."""
    name = f"{code.module}.{code.join_name}"
    conversations = [as_conversation(cls, o, agent, conversation_id) for o in outputs]
    got = work.user_code(name, code.join, conversations)
    argument = getattr(got, "prompt_argument", None)
    if argument is None:
        raise work.UserCodeError(name, TypeError("returned no conversation with a prompt argument"))
    return arguments.dump(argument)


# --- the fan-out -------------------------------------------------------------------------------


def agent_parallel_code(workflow_id: str, agent: AgentDoc) -> ParallelCode:
    """The agent's ``parallelize.py`` (Diskurs' ``location``), imported after its ``prompt.py``
    so that its ``from prompt import ...`` finds the agent's own classes, as in Diskurs."""
    doc = workflow.agent_path(workflow_id, agent.name)
    workflow.agent_code(workflow_id, agent)
    path = workflow.code_file(agent.parallel_location, PARALLELIZE, doc, "parallelLocation")
    module = workflow.import_file(path, doc, "parallelLocation")
    return parallel_code(module, doc, agent.branch_conversation_name, agent.join_conversations_name)


def join_step(step: Step, branches: int, arguments: dict[str, Any] | None = None) -> Step:
    """The step after a fan-out: it waits for its branches, then joins them (``arguments``:
    what the planner's turn goes on from)."""
    given = JoinInput(branches=branches, arguments=arguments or {}, agent_step=step.agent_step)
    return Step(
        index=step.index + 1,
        kind=StepKind.JOIN,
        agent=step.agent,
        turn=step.turn,
        input=given.to_firestore(),
    )


def new_branches(join: Step, arguments: list[dict[str, Any]]) -> tuple[Branch, ...]:
    """One branch per branched prompt argument, created with the join step."""
    return tuple(
        Branch(index=b, join=join.index, agent=join.agent, input=args)
        for b, args in enumerate(arguments)
    )


def branch_messages(
    conversation_id: str, join: Step | None, branches: tuple[Branch, ...]
) -> list[ConductorBranch]:
    """The messages that start a fan-out's branches (published after its commit)."""
    if join is None:
        return []
    return [_message(conversation_id, b, "fan-out") for b in branches if not b.depends_on]


# --- a branch's agent step ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BranchReply:
    """One agent step of a branch: its reply, whether the agent's ``is_final`` said so, and
    whether it was the last step the agent's turn may take."""

    output: dict[str, Any]
    is_final: bool
    last: bool = False


BranchTurn = Callable[[str, Conversation, Branch], BranchReply]
"""Asks the model for one agent step of a branch (``decide.branch_reply``); a DocumentError
when the branch cannot go on (a template, a class, replies that ran out)."""


def lease_path(conversation_id: str, unit: str) -> str:
    return paths.build(STEP_LEASE, conversationId=conversation_id, stepId=unit)


def run_branch(
    message: ConductorBranch,
    turns: Mapping[str, BranchTurn],
    ended: Callable[[work.Failure], None],
) -> None:
    """One agent step of a branch, a unit of work under the branch's lease; ``turns``: what
    runs a branch of each kind (``agent``: a model call, ``call``: a planned tool call)."""
    cid, index = message.conversation_id, message.index
    path = branch_path(cid, step_id(index), message.branch)
    unit = work.Unit(
        lease_path(cid, branch_unit(step_id(index), message.branch)),
        path,
        lambda: _branch_once(message, turns),
        ended=ended,
    )
    work.run(unit)


def _branch_once(message: ConductorBranch, turns: Mapping[str, BranchTurn]) -> None:
    cid, index = message.conversation_id, message.index
    conv = store.read(Conversation, conversation_path(cid))
    if conv.status != Status.RUNNING or conv.current_step != index:
        return  # the join is behind us, or the conversation ended
    path = branch_path(cid, step_id(index), message.branch)
    branch = store.read(Branch, path)
    if branch.status == StepStatus.DONE:
        _after_done(cid, index)  # a retry of the delivery whose publish was lost
        return
    if branch.status != StepStatus.PENDING or branch.agent_step != message.agent_step:
        return
    if branch.depends_on and not _unblocked(branch, read_branches(cid, index)):
        return  # its last dependency to finish publishes it
    turn = turns.get(branch.kind)
    if turn is None:
        reason = f"unknown branch kind {branch.kind!r} (one of {sorted(turns)})"
        _fail_branch(cid, branch, Problem(document=path, field="kind", reason=reason))
        return
    try:
        reply = turn(cid, conv, branch)
    except DocumentError as error:  # a template, a class, an answer that never came
        problem = Problem(document=error.document, field=error.field, reason=error.reason)
        _fail_branch(cid, branch, problem)
        return
    outcome = _commit_branch(cid, branch, reply, done=reply.is_final or reply.last)
    if outcome == StepStatus.DONE:
        _after_done(cid, index)
    elif outcome == StepStatus.PENDING:
        nxt = message.model_copy(update={"agent_step": branch.agent_step + 1, "reason": "next"})
        publish_branches(nxt)


def _pending_branch(cid: str, branch: Branch, transaction: store.Transaction) -> bool:
    """The conversation still waits at the join, and the branch at this agent step."""
    conv_path = conversation_path(cid)
    conv = parse_document(Conversation, conv_path, store.snapshot_data(conv_path, transaction))
    if conv.status != Status.RUNNING or conv.current_step != branch.join:
        return False
    path = branch_path(cid, step_id(branch.join), branch.index)
    now_ = parse_document(Branch, path, store.snapshot_data(path, transaction))
    return now_.status == StepStatus.PENDING and now_.agent_step == branch.agent_step


def _commit_branch(cid: str, branch: Branch, reply: BranchReply, done: bool) -> StepStatus | None:
    """Complete the branch's agent step once: DONE (the branch is done), PENDING (its next agent
    step follows), None (another delivery committed it, or the conversation moved on)."""
    path = branch_path(cid, step_id(branch.join), branch.index)

    def body(transaction: store.Transaction) -> StepStatus | None:
        if not _pending_branch(cid, branch, transaction):
            return None
        stamp = now()
        update: dict[str, Any] = {
            "output": reply.output,
            "outputs": [*branch.outputs, reply.output],
            "isFinal": reply.is_final,
            "updatedAt": stamp,
        }
        if done:
            update |= {"status": StepStatus.DONE.value, "completedAt": stamp}
        else:
            update |= {"agentStep": branch.agent_step + 1, "input": reply.output}
        transaction.update(store.ref(path), update)
        return StepStatus.DONE if done else StepStatus.PENDING

    return transactions.run(body)


def _fail_branch(cid: str, branch: Branch, problem: Problem) -> None:
    """A branch that cannot go on ends the conversation FAILED, naming the document and field
    (an error record too); the join step never runs."""

    def body(transaction: store.Transaction) -> bool:
        if not _pending_branch(cid, branch, transaction):
            return False
        path = branch_path(cid, step_id(branch.join), branch.index)
        stamp = now()
        transaction.update(
            store.ref(path),
            Branch.fields(status=StepStatus.FAILED.value, error=problem.reason, completed_at=stamp),
        )
        transaction.update(
            store.ref(conversation_path(cid)),
            Conversation.fields(
                status=Status.FAILED.value, error=problem.to_firestore(), updated_at=stamp
            ),
        )
        return True

    if transactions.run(body):
        error = DocumentError(problem.document, problem.field, problem.reason)
        record_error(current_function(), error)


def _unblocked(branch: Branch, siblings: list[Branch]) -> bool:
    """Every branch it depends on is done."""
    done = {b.index for b in siblings if b.status == StepStatus.DONE}
    return set(branch.depends_on) <= done


def _after_done(cid: str, index: int) -> None:
    """A branch is done: the branches that waited only for it are published, and once every
    branch is done, the join step. Two branches finishing together may both see it; a branch's
    or the join step's lease and commit make the second message nothing."""
    siblings = read_branches(cid, index)
    if all(b.status == StepStatus.DONE for b in siblings):
        publish_steps(ConductorStep(conversation_id=cid, index=index, reason="branches done"))
        return
    publish_branches(
        *(
            _message(cid, b, "dependencies done")
            for b in siblings
            if b.status == StepStatus.PENDING and b.depends_on and _unblocked(b, siblings)
        )
    )


def _message(cid: str, branch: Branch, reason: str) -> ConductorBranch:
    return ConductorBranch(
        conversation_id=cid,
        index=branch.join,
        branch=branch.index,
        agent_step=branch.agent_step,
        reason=reason,
    )


def read_branches(cid: str, index: int) -> list[Branch]:
    """The join step's branches, in order."""
    snaps = store.find(branches_collection(cid, step_id(index)))
    found = [parse_document(Branch, s.reference.path, s.to_dict()) for s in snaps]
    return sorted(found, key=lambda b: b.index)


# --- the join ----------------------------------------------------------------------------------


def ready(cid: str, step: Step, rearm: Callable[[str], None]) -> bool:
    """Every branch of the join step is done. While some still run, those that stand still are
    published again (an ended unit re-armed: its conversation was set back to RUNNING). Called
    by every run of the join step: the branches' own messages, a duplicate, the watchdog's."""
    expected = JoinInput.model_validate(step.input).branches
    branches = read_branches(cid, step.index)
    if len(branches) == expected and all(b.status == StepStatus.DONE for b in branches):
        return True
    before = now() - timedelta(seconds=conductor_settings().conductor_stalled_seconds)
    stalled = [
        b
        for b in branches
        if b.status == StepStatus.PENDING
        and (b.updated_at is None or b.updated_at <= before)
        and _unblocked(b, branches)
    ]
    for b in stalled:
        rearm(branch_unit(step_id(step.index), b.index))
    publish_branches(*(_message(cid, b, "re-drive") for b in stalled))
    return False


def outputs(branches: list[Branch]) -> list[dict[str, Any]]:
    return [b.output or {} for b in branches]
