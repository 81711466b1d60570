"""A human agent's step: it waits for a person's answer document, without holding anything.

Its run (a unit of work like every step) finds the answer, or the deadline passed, or neither:
then it writes the step's ``waiting`` map once (the question, the answer's schema, the
deadline) and returns, so a waiting step costs no lease, no attempt and no model call. Writing
the answer (``onHumanAnswerWritten``) publishes the step again; the conductor watchdog publishes
it once its deadline passed, or once it finds an answer whose wake was lost. Any delivery,
however often repeated, completes the step only through the commit transaction, so the answer
(or the deadline) counts once. The console and the REST API answer through ``submit``.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from google.api_core import exceptions as gexc

from functions import store, transactions
from functions.conductor import workflow
from functions.conductor.asking import validator
from functions.conductor.completion import (
    Completion,
    conversation_path,
    ended,
    failed,
    step_path,
)
from functions.conductor.turns import Context, after_step, go_on
from functions.conductor.wire import ConductorStep, publish_steps
from functions.errors import current_function, record_error
from functions.work import UserCodeError
from shared.conductor import arguments
from shared.conductor.documents import (
    AgentDoc,
    Conversation,
    Problem,
    Status,
    Step,
    StepKind,
    StepStatus,
    step_id,
)
from shared.conductor.human import (
    ANSWER_FIELD,
    MAX_ANSWER_BYTES,
    HumanAnswer,
    HumanConfig,
    HumanWait,
    OnDeadline,
    answer_path,
)
from shared.conductor.prompt_args import PromptValidationError
from shared.models import DocumentError, now, parse_document
from shared.prompts import PromptTemplateError, render_template


def decide(conversation_id: str, conversation: Conversation, step: Step) -> Completion | None:
    """The human step's completion (answered, or the deadline passed), or None: it waits."""
    try:
        return _decide(_human(conversation_id, conversation, step))
    except DocumentError as error:
        return failed(Problem(document=error.document, field=error.field, reason=error.reason))
    except PromptTemplateError as error:
        document, _, field = error.template_name.rpartition(".")
        return failed(Problem(document=document, field=field, reason=str(error)))


@dataclasses.dataclass(frozen=True)
class _Human:
    """The step in its conversation and workflow, its agent and the agent's code."""

    ctx: Context
    agent: AgentDoc
    doc: str
    """The agent's document, which errors in its template name."""
    config: HumanConfig
    code: workflow.AgentCode

    def values(self) -> dict[str, Any]:
        """The step's arguments, as the agent's answer class holds them."""
        return arguments.dump(arguments.load(self.code.user, self.ctx.step.input))


def _human(cid: str, conversation: Conversation, step: Step) -> _Human:
    wf = workflow.read_workflow(conversation.workflow_id)
    agent = workflow.read_agent(conversation.workflow_id, step.agent)
    doc = workflow.agent_path(conversation.workflow_id, agent.name)
    if agent.human is None:
        raise DocumentError(doc, "human", "the step waits for a person, the agent is no human")
    code = workflow.agent_code(conversation.workflow_id, agent)
    return _Human(Context.of(cid, conversation, step, wf), agent, doc, agent.human, code)


def _decide(human: _Human) -> Completion | None:
    step = human.ctx.step
    answer = read_answer(human.ctx.cid, step.index)
    if answer is not None:
        accepted = _accepted(human, answer)
        if accepted is not None:
            done = _handed_back(human, arguments.dump(accepted), set(answer.values))
            return go_on(human.ctx, done)
    deadline = deadline_of(step, human.config)
    if now() >= deadline:
        return go_on(human.ctx, _deadline_passed(human, deadline))
    _wait(human, deadline)
    return None


def read_answer(conversation_id: str, index: int) -> HumanAnswer | None:
    path = answer_path(conversation_id, step_id(index))
    data = store.snapshot_data(path)
    return None if data is None else parse_document(HumanAnswer, path, data)


def deadline_of(step: Step, config: HumanConfig) -> datetime:
    """From the step's creation (written by the commit that created it): every delivery
    computes the same deadline, so the record it leaves is the same record."""
    return (step.created_at or now()) + timedelta(seconds=config.deadline_seconds)


def check(human: _Human, values: Any) -> Any:
    """The answer over the step's arguments (a person answers some fields, and may correct
    the others), checked as a model's reply is: into the agent's answer class (ours or
    Diskurs'), then its ``is_valid`` (PromptValidationError names the problem; anything else
    it raises is the user's code failing)."""
    if not isinstance(values, dict):
        raise PromptValidationError("the answer must be a map of the answer's fields")
    size = len(json.dumps(values, default=str).encode())
    if size > MAX_ANSWER_BYTES:
        raise PromptValidationError(
            f"the answer is {size} bytes, over the limit of {MAX_ANSWER_BYTES} bytes"
        )
    current = human.values()
    name = workflow.code_name(human.agent, "is_valid")
    return validator(human.code.user, human.code.is_valid, current, name)({**current, **values})


def _accepted(human: _Human, answer: HumanAnswer) -> Any:
    """The answer, or None after one record naming the answer document (a raw write that
    skipped the console's and the API's check): the step keeps waiting for a good one."""
    try:
        return check(human, answer.values)
    except PromptValidationError as error:
        path = answer_path(human.ctx.cid, step_id(human.ctx.step.index))
        record_error(current_function(), DocumentError(path, "values", str(error)))
        return None


def _handed_back(
    human: _Human, output: dict[str, Any], given: set[str], note: str = ""
) -> Completion:
    """The turn ends as a model agent's final step ends it (the memory, ``topics``, a
    finalizer's result); the memory takes only the fields the person gave, so a value steered
    in the console since the step began is not undone."""
    done = after_step(human.ctx, human.agent, human.code.user, output, final=True, note=note)
    kept = {k: v for k, v in (done.hand_back or {}).items() if k in given}
    return dataclasses.replace(done, hand_back=kept, memory_fields=tuple(kept))


def _deadline_passed(human: _Human, deadline: datetime) -> Completion:
    """One record naming the step and its missing answer, then what ``on_deadline`` says."""
    setting = human.config.on_deadline
    reason = f"no answer by the deadline {deadline.isoformat(timespec='seconds')} ({setting})"
    where = step_path(human.ctx.cid, human.ctx.step.index)
    if setting == OnDeadline.FAIL:
        problem = Problem(document=where, field=ANSWER_FIELD, reason=reason)
        return Completion(status=Status.FAILED, problem=problem)  # the runner records it
    record_error(current_function(), DocumentError(where, ANSWER_FIELD, reason),
                 severity="warning")  # fmt: skip
    if setting == OnDeadline.FINISH:
        finish = human.ctx.wf.conductor.finish_field
        value = human.ctx.memory().get(finish)
        result = {finish: value} if value not in (None, "") else None
        return ended("deadline", result, output=human.values(), note=reason)
    given = dict(human.config.deadline_answer)
    return _handed_back(human, {**human.values(), **given}, set(given), note=reason)


def _wait(human: _Human, deadline: datetime) -> None:
    """Write the step's ``waiting`` map once, while it is pending: what the console shows."""
    step = human.ctx.step
    if step.waiting is not None:
        return
    values = human.values()
    template = f"{human.doc}.userPrompt"
    question = render_template(
        human.agent.user_prompt, {"query": human.ctx.conv.query, **values}, template,
        lenient=human.ctx.diskurs,
    )  # fmt: skip
    schema = arguments.reply_schema(human.code.user, known=values)
    wait = HumanWait(
        question=question.strip(),
        answer_schema=schema,
        deadline=deadline,
        on_deadline=human.config.on_deadline,
    )
    path = step_path(human.ctx.cid, step.index)

    def body(transaction: store.Transaction) -> None:
        data = store.snapshot_data(path, transaction) or {}
        if data.get("status") == StepStatus.PENDING.value and not data.get("waiting"):
            transaction.update(store.ref(path), Step.fields(waiting=wait.to_firestore()))

    transactions.run(body)


# --- waking it ------------------------------------------------------------------------------


def wake(conversation_id: str, answer_id: str) -> None:
    """An answer was written (or deleted): publish its step, which reads it. A document whose
    id is no step's is recorded, naming it."""
    if not (answer_id.isdigit() and len(answer_id) == len(step_id(0))):
        path = answer_path(conversation_id, answer_id)
        reason = f"the id must be the id of the step it answers (e.g. {step_id(3)})"
        record_error(current_function(), DocumentError(path, "(id)", reason))
        return
    publish_steps(
        ConductorStep(conversation_id=conversation_id, index=int(answer_id), reason="answer")
    )


class Watch(StrEnum):
    """A pending step as the watchdog sees it."""

    NOT_WAITING = "not waiting"
    WAITING = "waiting"
    """A person may still answer: nothing to re-drive."""
    DUE = "due"
    """Its answer is there (the write's wake was lost: a crash, a lost event), or its deadline
    passed: publish it, so its run takes the answer or records the missing one."""


def watch(conversation_id: str, index: int, step_data: dict[str, Any]) -> Watch:
    """One read per waiting step and tick: whether its answer exists."""
    waiting = step_data.get("waiting")
    if not isinstance(waiting, dict):
        return Watch.NOT_WAITING
    deadline = waiting.get("deadline")
    if isinstance(deadline, datetime) and deadline > now():
        answered = store.snapshot_data(answer_path(conversation_id, step_id(index)))
        return Watch.WAITING if answered is None else Watch.DUE
    return Watch.DUE


# --- answering ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Refused:
    """An answer not written: the HTTP status, the field and why."""

    status: int
    field: str
    reason: str


def waiting_step(conversation_id: str) -> Step | None:
    """The conversation's current step, if it is a human step waiting for its answer."""
    found = _waiting(conversation_id)
    return found[1] if found is not None else None


def _waiting(conversation_id: str) -> tuple[dict[str, Any], Step] | None:
    """The conversation's data and its waiting human step, one read of each."""
    conv = store.snapshot_data(conversation_path(conversation_id)) or {}
    index = conv.get("currentStep")
    if conv.get("status") != Status.RUNNING.value or not isinstance(index, int) or index < 0:
        return None
    data = store.snapshot_data(step_path(conversation_id, index))
    if data is None:
        return None
    step = parse_document(Step, step_path(conversation_id, index), data)
    waits = step.kind == StepKind.HUMAN and step.status == StepStatus.PENDING
    return (conv, step) if waits else None


def submit(conversation_id: str, values: Any, by: str) -> str | Refused:
    """Write the person's answer to the conversation's waiting step, checked as the step will
    check it; the answer document's path, or why not. The first answer counts: another one
    for the same step is refused (409), a duplicate of the same request included."""
    found = _waiting(conversation_id)
    if found is None:
        return Refused(409, "currentStep", "the conversation waits for no answer")
    data, step = found
    conv = store.parse(Conversation, conversation_path(conversation_id), data)
    try:
        check(_human(conversation_id, conv, step), values)
    except PromptValidationError as error:
        return Refused(422, "values", str(error))
    except DocumentError as error:
        return Refused(409, error.field, f"{error.document}: {error.reason}")
    except UserCodeError as error:  # the workflow's code fails, not the person
        return Refused(500, error.function, str(error))
    path = answer_path(conversation_id, step_id(step.index))
    answer = HumanAnswer(values=dict(values), by=by, created_at=now())
    try:
        store.ref(path).create(answer.to_firestore())
    except gexc.AlreadyExists:
        return Refused(409, "values", f"step {step_id(step.index)} is answered already")
    return path
