"""completeStageAsAgentParticipant: one move per participant update.

A move is one of: resolve an attention check, accept a pending transfer, or complete the current
stage (answering it with the model first where the stage asks for it). Each move is committed in
a transaction that re-checks it still applies, so duplicate, concurrent and late deliveries of the
same update make the move once. A committed move writes the participant document, whose update
event makes the next move.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from functions import store, transactions
from functions.agents import cohort_lock
from functions.agents.model_call import AnswerFailed, CallSite, ask
from functions.agents.prompting import build_stage_prompt, creator_api_keys
from functions.chat import fanout
from functions.errors import record_error
from shared.llm import ModelError
from shared.models import (
    KNOWN_KINDS,
    CohortConfig,
    ConversationStage,
    DocumentError,
    Experiment,
    ParticipantProfile,
    ParticipantStatus,
    ProfileBase,
    ProgressTimestamps,
    StageAnswer,
    StageConfig,
    now,
)
from shared.stages import ANSWER_SPECS, AgentAction, agent_action

FUNCTION = "completeStageAsAgentParticipant"
log = logging.getLogger(__name__)


class Move(StrEnum):
    NONE = "none"
    ATTENTION_CHECK_RESOLVED = "attention-check-resolved"
    TRANSFER_ACCEPTED = "transfer-accepted"
    STARTED = "started"
    WAITING_LOCKED = "waiting-locked"
    WAITING = "waiting"
    STAGE_COMPLETED = "stage-completed"
    FINISHED = "finished"
    FAILED = "failed"
    BLOCKED = "blocked"
    DEFAULTS_FILLED = "defaults-filled"


Mutation = Callable[[ParticipantProfile, Any], None]
"""Changes the participant in place inside a transaction (may also write other documents);
raises _Stale when the move no longer applies."""


class _Stale(Exception):
    """The participant changed since the decision: the move no longer applies."""


class ProviderUnavailable(Exception):
    """The model provider was still failing (rate limit, outage) when the function's time ran
    out. The error is recorded; the caller hands the move to a retrying function so the agent
    resumes once the provider recovers, instead of waiting for someone to touch it."""


def _position(p: ParticipantProfile) -> tuple[Any, ...]:
    """What a move changes: if this differs from the decision's, the move was made elsewhere."""
    ts = p.timestamps
    return (
        p.current_stage_id,
        p.current_status,
        p.current_cohort_id,
        p.transfer_cohort_id,
        sorted(ts.completed_stages),
        ts.end_experiment,
        ts.start_experiment is None,
    )


def _commit(participant_path: str, decided: ParticipantProfile, mutate: Mutation) -> bool:
    """Apply ``mutate`` to a fresh read in a transaction; write only the fields that changed.

    Under contention (several deliveries for one participant at once) attempts abort; they are
    retried with jittered exponential backoff so contenders fall out of step, and a retry first
    checks whether another delivery already moved the participant (then there is nothing to do).
    """
    doc = store.ref(participant_path)

    def body(transaction: Any) -> bool:
        current = store.read(ParticipantProfile, participant_path, transaction)
        before = current.to_firestore()
        try:
            mutate(current, transaction)
        except _Stale:
            return False
        current.agent_blocked_on = None  # it moved: whatever blocked it is resolved
        after = current.to_firestore()
        changed = {k: v for k, v in after.items() if before.get(k) != v}
        if changed:
            transaction.update(doc, changed)
        return bool(changed)

    def settled() -> bool | None:
        moved = _position(store.read(ParticipantProfile, participant_path)) != _position(decided)
        return False if moved else None

    return transactions.run(body, settled=settled)


def _fill_start_timestamps(p: ParticipantProfile) -> None:
    stamp = now()
    ts = p.timestamps
    ts.start_experiment = ts.start_experiment or stamp
    ts.accepted_tos = ts.accepted_tos or stamp
    if p.current_stage_id and p.current_stage_id not in ts.ready_stages:
        ts.ready_stages = {**ts.ready_stages, p.current_stage_id: stamp}


def _needs_start_timestamps(p: ParticipantProfile) -> bool:
    ts = p.timestamps
    return not (ts.start_experiment and ts.accepted_tos and p.current_stage_id in ts.ready_stages)


def _complete_stage(p: ParticipantProfile, experiment: Experiment) -> None:
    """Deliberate Lab's updateParticipantNextStage, in memory."""
    stamp = now()
    stage_id = p.current_stage_id
    p.timestamps.completed_stages = {**p.timestamps.completed_stages, stage_id: stamp}
    next_id = experiment.next_stage_id(stage_id)
    if next_id is None:
        p.timestamps.end_experiment = stamp
        p.current_status = ParticipantStatus.SUCCESS
    else:
        p.current_stage_id = next_id
        p.timestamps.ready_stages = {**p.timestamps.ready_stages, next_id: stamp}


def _same_position(decided: ParticipantProfile) -> Callable[[ParticipantProfile], None]:
    def check(current: ParticipantProfile) -> None:
        if (
            current.current_stage_id != decided.current_stage_id
            or current.current_status != decided.current_status
            or current.current_cohort_id != decided.current_cohort_id
            or current.timestamps.end_experiment is not None
            or decided.current_stage_id in current.timestamps.completed_stages
        ):
            raise _Stale

    return check


def _answer(
    experiment: Experiment,
    cohort: CohortConfig,
    participant: ParticipantProfile,
    stage: StageConfig,
) -> StageAnswer | ProfileBase:
    spec = ANSWER_SPECS[stage.kind]
    prompt = build_stage_prompt(experiment, cohort, participant, stage)
    site = CallSite(experiment.id, participant, stage.id, f"{stage.kind} stage answer")
    return ask(
        site,
        prompt.text,
        prompt.schema,
        lambda reply: spec.extract(stage, prompt.answer_context, reply),
        retries=prompt.config.num_retries,
        generation_config=prompt.config.generation_config,
        api_keys=creator_api_keys(experiment),
    )


def _existing_answer(
    experiment_id: str, participant: ParticipantProfile, stage: StageConfig
) -> bool:
    data = store.snapshot_data(
        store.stage_data_path(experiment_id, participant.private_id, stage.id)
    )
    return bool(data) and data.get("kind") == stage.kind


def _completion(
    experiment: Experiment, decided: ParticipantProfile, answer: StageAnswer | ProfileBase | None
) -> Mutation:
    check = _same_position(decided)

    def mutate(p: ParticipantProfile, transaction: Any) -> None:
        check(p)
        if isinstance(answer, ProfileBase):
            p.name, p.avatar, p.pronouns = answer.name, answer.avatar, answer.pronouns
        elif answer is not None:
            path = store.stage_data_path(experiment.id, p.private_id, p.current_stage_id)
            if not store.ref(path).get(transaction=transaction).exists:
                transaction.set(store.ref(path), answer.to_firestore())
        _fill_start_timestamps(p)
        _complete_stage(p, experiment)

    return mutate


def _resolve_attention_check(p: ParticipantProfile, transaction: Any) -> None:
    """DL's acceptParticipantCheck; an agent that already finished goes back to SUCCESS (DL
    would leave the check unanswered forever)."""
    if p.current_status != ParticipantStatus.ATTENTION_CHECK:
        raise _Stale
    if p.timestamps.end_experiment is not None:
        p.current_status = ParticipantStatus.SUCCESS
    elif p.transfer_cohort_id:
        p.current_status = ParticipantStatus.TRANSFER_PENDING
    else:
        p.current_status = ParticipantStatus.IN_PROGRESS


def _accept_transfer(experiment: Experiment, stage: StageConfig | None) -> Mutation:
    def mutate(p: ParticipantProfile, transaction: Any) -> None:
        if p.current_status != ParticipantStatus.TRANSFER_PENDING or not p.transfer_cohort_id:
            raise _Stale
        target = store.cohort_path(experiment.id, p.transfer_cohort_id)
        if not store.ref(target).get(transaction=transaction).exists:
            raise DocumentError(
                store.participant_path(experiment.id, p.private_id),
                "transferCohortId",
                f"cohort {p.transfer_cohort_id!r} does not exist ({target})",
            )
        p.timestamps.cohort_transfers = {
            **p.timestamps.cohort_transfers,
            p.current_cohort_id: now(),
        }
        p.current_cohort_id, p.transfer_cohort_id = p.transfer_cohort_id, None
        p.current_status = ParticipantStatus.IN_PROGRESS
        _fill_start_timestamps(p)
        if stage is not None and stage.kind == "transfer":
            _complete_stage(p, experiment)

    return mutate


def _after_move(experiment_id: str, participant_path: str) -> None:
    """Unlock check for where the move left the participant (it counts as ready there now)."""
    p = store.read(ParticipantProfile, participant_path)
    if p.current_cohort_id and p.timestamps.end_experiment is None:
        cohort_lock.unlock_if_ready(experiment_id, p.current_cohort_id, p.current_stage_id)


def _load_position(
    experiment_id: str, participant: ParticipantProfile
) -> tuple[Experiment, StageConfig]:
    path = store.participant_path(experiment_id, participant.private_id)
    experiment = store.read(Experiment, store.experiment_path(experiment_id))
    if participant.current_stage_id not in experiment.stage_ids:
        raise DocumentError(
            path,
            "currentStageId",
            f"stage {participant.current_stage_id!r} is not in the experiment's stageIds",
            blocked_on=store.experiment_path(experiment_id),
        )
    stage = store.read_stage(experiment_id, participant.current_stage_id)
    return experiment, stage


def advance_agent(experiment_id: str, participant_id: str) -> Move:
    """Make at most one move for the participant. Humans only get the unlock check.

    A document that stops an agent (missing, malformed) is recorded, and the agent is marked
    as blocked on it (``agentBlockedOn``), so that writing that document wakes it.
    """
    path = store.participant_path(experiment_id, participant_id)
    participant = store.read(ParticipantProfile, path)
    try:
        if participant.is_agent and _lacks_position(participant):
            return Move.DEFAULTS_FILLED if _fill_defaults(experiment_id, path) else Move.NONE
        return _move(experiment_id, path, participant)
    except DocumentError as error:
        record_error(FUNCTION, error)
        if participant.is_agent:
            _mark_blocked(path, participant, error)
        return Move.BLOCKED


def _lacks_position(p: ParticipantProfile) -> bool:
    return not (p.public_id and p.current_stage_id and p.current_cohort_id)


def _fill_defaults(experiment_id: str, path: str) -> bool:
    """An agent added by hand in the console with only its agentConfig gets the fields it lacks
    (ids, status, first stage, the cohort when the experiment has just one, timestamps); the
    write is its next trigger, so it then starts like any other agent."""
    private_id = path.rsplit("/", 1)[1]
    experiment = store.read(Experiment, store.experiment_path(experiment_id))
    if not experiment.stage_ids:
        reason = "the experiment has no stages for the agent to start at"
        raise DocumentError(store.experiment_path(experiment_id), "stageIds", reason)
    cohorts = [
        snap.id
        for snap in store.db()
        .collection(store.experiment_path(experiment_id) + "/cohorts")
        .select([])
        .get()
    ]

    def body(transaction: Any) -> bool:
        raw = store.snapshot_data(path, transaction) or {}
        defaults: dict[str, Any] = {
            "type": "participant",
            "privateId": private_id,
            "publicId": private_id[:8],  # DL's convention for mediators' public ids
            "currentStatus": ParticipantStatus.IN_PROGRESS.value,
            "currentStageId": experiment.stage_ids[0],
            "timestamps": ProgressTimestamps().to_firestore(),
        }
        if len(cohorts) == 1:
            defaults["currentCohortId"] = cohorts[0]
        elif not raw.get("currentCohortId"):
            raise DocumentError(
                path,
                "currentCohortId",
                f"required: the experiment has {len(cohorts)} cohorts; set the one to join",
            )
        missing = {k: v for k, v in defaults.items() if not raw.get(k)}
        if missing:
            transaction.update(store.ref(path), missing)
        return bool(missing)

    return transactions.run(body)


def _mark_blocked(path: str, participant: ParticipantProfile, error: DocumentError) -> None:
    blocked = {"document": error.blocked_on, "field": error.field, "reason": error.reason}
    if participant.agent_blocked_on is None or any(
        participant.agent_blocked_on.get(k) != v for k, v in blocked.items()
    ):
        store.ref(path).update({"agentBlockedOn": {**blocked, "since": now()}})


def _move(experiment_id: str, path: str, participant: ParticipantProfile) -> Move:
    if not participant.is_agent:
        if (
            participant.current_cohort_id
            and participant.current_stage_id
            and participant.timestamps.end_experiment is None
        ):
            cohort_lock.unlock_if_ready(
                experiment_id, participant.current_cohort_id, participant.current_stage_id
            )
            chat = fanout.stage_if_unlocked_chat(
                experiment_id, participant.current_cohort_id, participant.current_stage_id
            )
            if chat is not None:  # a human in a chat: the mediators open it
                fanout.request_openings(
                    experiment_id, participant.current_cohort_id, chat, participant
                )
        return Move.NONE
    status = participant.current_status
    if status != ParticipantStatus.ATTENTION_CHECK and participant.timestamps.end_experiment:
        return Move.NONE
    if status == ParticipantStatus.ATTENTION_CHECK:
        return (
            Move.ATTENTION_CHECK_RESOLVED
            if _commit(path, participant, _resolve_attention_check)
            else Move.NONE
        )
    experiment, stage = _load_position(experiment_id, participant)
    if status == ParticipantStatus.TRANSFER_PENDING:
        if not _commit(path, participant, _accept_transfer(experiment, stage)):
            return Move.NONE
        _after_move(experiment_id, path)
        return Move.TRANSFER_ACCEPTED
    if status != ParticipantStatus.IN_PROGRESS:
        return Move.NONE
    return _progress(experiment, participant, stage)


def _read_cohort(experiment_id: str, participant: ParticipantProfile) -> CohortConfig:
    path = store.participant_path(experiment_id, participant.private_id)
    if not participant.current_cohort_id:
        raise DocumentError(path, "currentCohortId", "the participant has no cohort")
    cohort_path = store.cohort_path(experiment_id, participant.current_cohort_id)
    if store.snapshot_data(cohort_path) is None:
        raise DocumentError(
            path,
            "currentCohortId",
            f"cohort {participant.current_cohort_id!r} does not exist",
            blocked_on=cohort_path,
        )
    return store.read(CohortConfig, cohort_path)


def _warn_unknown_kind(experiment_id: str, stage: StageConfig) -> None:
    if stage.kind not in KNOWN_KINDS:
        reason = f"unknown stage kind {stage.kind!r}: agents take no action there and advance"
        error = DocumentError(store.stage_path(experiment_id, stage.id), "kind", reason)
        record_error(FUNCTION, error, severity="warning")


def _start(path: str, participant: ParticipantProfile) -> bool:
    """Stamp the start timestamps if they are missing (a move of its own)."""
    return _needs_start_timestamps(participant) and _commit(
        path, participant, lambda p, _t: _fill_start_timestamps(p)
    )


def _progress(experiment: Experiment, participant: ParticipantProfile, stage: StageConfig) -> Move:
    path = store.participant_path(experiment.id, participant.private_id)
    cohort = _read_cohort(experiment.id, participant)
    _warn_unknown_kind(experiment.id, stage)
    if not cohort.stage_unlock_map.get(stage.id):
        started = _start(path, participant)
        cohort_lock.unlock_if_ready(experiment.id, cohort.id, stage.id)  # its trigger wakes us
        return Move.STARTED if started else Move.WAITING_LOCKED
    action = agent_action(stage)
    if action == AgentAction.WAIT:
        started = _start(path, participant)
        if isinstance(stage, ConversationStage):  # openings (once each: turns take a lock)
            fanout.request_openings(experiment.id, cohort.id, stage, participant)
        return Move.STARTED if started else Move.WAITING
    answer = None
    if action == AgentAction.ANSWER and not _existing_answer(experiment.id, participant, stage):
        try:
            answer = _answer(experiment, cohort, participant, stage)
        except ModelError as error:
            # Configuration or credentials: the agent stays; fixing the cause and touching the
            # participant resumes it. A provider still failing: retried (ProviderUnavailable).
            reason = f"stage {stage.id!r}: {error.status}: {error}"
            if error.retryable:
                reason += "; the move will be retried"
            field = error.field or "agentConfig.modelSettings"
            record_error(FUNCTION, DocumentError(path, field, reason))
            if error.retryable:
                raise ProviderUnavailable(reason) from error
            return Move.FAILED
        except AnswerFailed as error:
            # The model keeps answering invalidly: record why and move on without an answer,
            # rather than leave the agent (and a cohort waiting for it) stuck.
            reason = f"stage {stage.id!r}: {error}; the agent moved on without an answer"
            record_error(FUNCTION, DocumentError(path, "stageData", reason))
    if not _commit(path, participant, _completion(experiment, participant, answer)):
        return Move.NONE
    _after_move(experiment.id, path)
    return Move.FINISHED if experiment.next_stage_id(stage.id) is None else Move.STAGE_COMPLETED


def complete_stage_from_outside(experiment_id: str, participant_id: str, stage_id: str) -> bool:
    """Complete ``stage_id`` for the participant if it is still there and in progress (chat
    logic leaving a chat, the watchdog ending one). True if this call made the move."""
    path = store.participant_path(experiment_id, participant_id)
    participant = store.read(ParticipantProfile, path)
    if (
        participant.current_stage_id != stage_id
        or participant.current_status != ParticipantStatus.IN_PROGRESS
        or participant.timestamps.end_experiment is not None
    ):
        return False
    experiment = store.read(Experiment, store.experiment_path(experiment_id))
    if not _commit(path, participant, _completion(experiment, participant, None)):
        return False
    _after_move(experiment_id, path)
    return True
