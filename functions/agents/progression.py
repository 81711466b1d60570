"""completeStageAsAgentParticipant: one move per participant update.

A move is one of: resolve an attention check, accept a pending transfer, or complete the current
stage (answering it with the model first where the stage asks for it). Each move is committed in
a transaction that re-checks it still applies, so duplicate, concurrent and late deliveries of the
same update make the move once. A committed move writes the participant document, whose update
event makes the next move.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import logging
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import firestore

from functions import reads, spend, store, transactions, work
from functions.agents import cohort_lock, moves, roles, spawn
from functions.agents.model_call import AnswerFailed, CallSite, ProviderUnavailable, ask
from functions.agents.prompting import (
    build_stage_prompt,
    context_reads,
    creator_api_keys,
    creator_keys_path,
    persona_prompt_path,
)
from functions.errors import error_id, record_error
from functions.wire import publish_wakes
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
    COALESCED = "coalesced"
    """Another invocation is moving the agent; it was asked to make this move too."""


BLOCKED_FIELD = "agentBlockedOn"


@dataclasses.dataclass(frozen=True)
class ChatEntry:
    """The participant is at an unlocked chat stage: its opening turns are due (each is taken
    once, so asking again is harmless). The caller asks the chat for them: progression sits
    below the chat and does not call it."""

    cohort_id: str
    stage: ConversationStage
    participant: ParticipantProfile


@dataclasses.dataclass(frozen=True)
class Advance:
    move: Move
    chat: ChatEntry | None = None


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
    """Whether the stage was answered; the answer read ahead stays for the prompt, which shows
    it too (nothing is written between)."""
    path = store.stage_data_path(experiment_id, participant.private_id, stage.id)
    snap = reads.current().peek(path)
    data = store.data_of(snap) if snap is not None else store.snapshot_data(path)
    return data is not None and data.get("kind") == stage.kind


def _resolve_attention_check(p: ParticipantProfile, transaction: firestore.Transaction) -> None:
    """DL's acceptParticipantCheck; an agent that already finished goes back to SUCCESS (DL
    would leave the check unanswered forever)."""
    if p.current_status != ParticipantStatus.ATTENTION_CHECK:
        raise moves.Stale
    if p.timestamps.end_experiment is not None:
        p.current_status = ParticipantStatus.SUCCESS
    elif p.transfer_cohort_id:
        p.current_status = ParticipantStatus.TRANSFER_PENDING
    else:
        p.current_status = ParticipantStatus.IN_PROGRESS


def _accept_transfer(experiment: Experiment, stage: StageConfig | None) -> moves.Mutation:
    def mutate(p: ParticipantProfile, transaction: firestore.Transaction) -> None:
        if p.current_status != ParticipantStatus.TRANSFER_PENDING or not p.transfer_cohort_id:
            raise moves.Stale
        target = store.cohort_path(experiment.id, p.transfer_cohort_id)
        if not moves.exists(store.ref(target), transaction):
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
        moves.fill_start_timestamps(p)
        if stage is not None and stage.kind == "transfer":
            moves.complete_stage(p, experiment)

    return mutate


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
    _note_stage(experiment_id, stage)
    return experiment, stage


def _document_id(value: Any) -> bool:
    """Whether ``value`` can name a document (a guess read with others must not fail them)."""
    return isinstance(value, str) and bool(value) and "/" not in value and value not in (".", "..")


@dataclasses.dataclass(frozen=True)
class Seen:
    """Where the participant was last seen (the triggering update, the query that woke it):
    its cohort and stage are read in the same round trip as the participant itself. Only a
    guess: the move decides on what it reads, and a guess that is wrong costs two reads."""

    cohort_id: str = ""
    stage_id: str = ""
    persona: str = ""
    """The agent's persona (``agentConfig.agentId``), when the event showed it: its prompt for
    the stage is read in the same round trip too."""

    @classmethod
    def of(cls, data: dict[str, Any] | None) -> Seen | None:
        data = data or {}
        cohort, stage = data.get("currentCohortId"), data.get("currentStageId")
        ids = (cohort, stage)
        if all(_document_id(i) for i in ids):
            config = data.get("agentConfig")
            persona = config.get("agentId") if isinstance(config, dict) else None
            return cls(str(cohort), str(stage), str(persona) if _document_id(persona) else "")
        return None

    def paths(self, experiment_id: str) -> list[str]:
        """The documents read with the participant where it was seen: its stage and cohort,
        and the persona's prompt there unless this instance knows the stage asks no model."""
        asks = _asks_model.get((store.project_id(), experiment_id, self.stage_id), True)
        persona = self.persona and asks
        return [
            store.stage_path(experiment_id, self.stage_id),
            store.cohort_path(experiment_id, self.cohort_id),
            persona_prompt_path(experiment_id, self.persona, self.stage_id) if persona else "",
        ]


_asks_model: dict[tuple[str | None, str, str], bool] = {}
"""Per instance, whether each stage it read asks an agent for an answer (ids only, a guess:
a stage changed since costs a read, or a round trip for its persona's prompt)."""
KINDS_KEPT = 10_000


def _note_stage(experiment_id: str, stage: StageConfig) -> None:
    if len(_asks_model) >= KINDS_KEPT:
        _asks_model.clear()
    asks = agent_action(stage) == AgentAction.ANSWER
    _asks_model[(store.project_id(), experiment_id, stage.id)] = asks


_beside_lease: contextvars.ContextVar[bool] = contextvars.ContextVar("beside", default=False)
"""The participant this move decides on was read beside the move lease's acquisition, not
after it: a move that will call the model reads it again first (``_answer_once``)."""


def advance_agent(experiment_id: str, participant_id: str, seen: Seen | None = None) -> Advance:
    """Make the participant's next move. Humans only get the unlock check.

    An agent's moves run under its move lease: deliveries that arrive while another invocation
    moves it (duplicates, its own next update, a wake) ask that one to run again instead of
    racing it, so a move, and its model call, is made once.
    The participant is read beside the lease's acquisition, in the same round trip (a human's
    update takes the lease too, so the document is read once per run, not once to tell an
    agent and again to move it). A move is written conditional on the participant as read, so
    a read older than the lease can only make the write fail and the move be decided again;
    what is not undone that way, a model call, is made only after a read under the lease
    (``_answer_once``).
    """
    path = store.participant_path(experiment_id, participant_id)
    paths = _first_read(experiment_id, participant_id, seen)
    started = reads.start(lambda: reads.current().read_now(paths))  # beside the lease
    first = [started]
    try:
        outcome = work.run(
            work.Unit(
                store.move_lease_path(experiment_id, participant_id),
                path,
                lambda: _advance_once(experiment_id, participant_id, seen, first),
                ended=lambda failure: _mark_ended(path, failure),
                on_overflow=lambda: publish_wakes(experiment_id, "moves queued", participant_id),
            )
        )
    finally:
        if first:  # not taken (coalesced, ended): nothing is left in flight
            with contextlib.suppress(Exception):
                started()
    if outcome.state == work.State.ENDED:
        return Advance(Move.BLOCKED)
    if outcome.result is None:
        return Advance(Move.COALESCED)
    return outcome.result


def _mark_ended(path: str, failure: work.Failure) -> None:
    """The move failed its attempt budget: the agent is marked blocked, as on a bad document,
    so that it stops calling the model and the console shows why. It is marked blocked on the
    stage it is at (the input a move most likely failed on; writing it re-arms the move), or on
    itself when it has none; the participant's own update re-arms it too."""
    data = store.snapshot_data(path)
    if data is None:
        return  # deleted meanwhile: nobody to mark
    stage_id = data.get("currentStageId")
    blocked_on = path
    if isinstance(stage_id, str) and stage_id and "/" not in stage_id:
        blocked_on = store.stage_path(path.split("/")[1], stage_id)
    error = DocumentError(failure.document, failure.field, failure.reason, blocked_on=blocked_on)
    marked = {**_blocked_on(error), "errorId": error_id(failure.recorded)}  # the unit's record
    if (data.get(BLOCKED_FIELD) or {}).get("errorId") != marked["errorId"]:
        store.ref(path).update(
            ParticipantProfile.fields(agent_blocked_on={**marked, "since": now()})
        )


def _first_read(experiment_id: str, participant_id: str, seen: Seen | None) -> list[str]:
    """What a move reads first: the participant, the experiment, and where it was ``seen``."""
    participant = store.participant_path(experiment_id, participant_id)
    where = seen.paths(experiment_id) if seen is not None else []
    return [participant, store.experiment_path(experiment_id), *where]


def _advance_once(
    experiment_id: str,
    participant_id: str,
    seen: Seen | None,
    first: list[Callable[[], list[Any]]],
) -> Advance:
    """One move, from one round trip's read: the participant with the experiment, and the
    cohort, stage and persona prompt where it was ``seen``. The first run takes the read
    started beside the lease (``first``: a move that asks the model reads the participant
    again before, ``_beside_lease``); a run again reads after it."""
    path = store.participant_path(experiment_id, participant_id)
    experiment_path = store.experiment_path(experiment_id)
    if first:
        snapshots = first.pop()()
        beside = any(snap.reference.path == path for snap in snapshots)  # else read under it
    else:
        snapshots = reads.current().read_now(_first_read(experiment_id, participant_id, seen))
        beside = False
    for snap in snapshots:  # the run's budget as read now: the spend check needs no read
        if snap.reference.path == experiment_path:
            spend.seen(experiment_path, store.data_of(snap))
    token = _beside_lease.set(beside)
    try:
        with reads.ahead((), snapshots), store.writing_later():  # the log goes with the move
            return _advance_read(experiment_id, path)
    finally:
        _beside_lease.reset(token)


def _advance_read(experiment_id: str, path: str) -> Advance:
    """A document that stops an agent (missing, malformed) is recorded, and the agent is
    marked as blocked on it (``agentBlockedOn``), so that writing that document wakes it."""
    participant_id = path.rsplit("/", 1)[1]
    participant, read_at = store.read_versioned(ParticipantProfile, path)
    if participant.is_agent and participant.private_id != participant_id:
        reason = f"must equal the document id {participant_id!r} (it names another participant)"
        raise DocumentError(path, "privateId", reason)
    try:
        if participant.is_agent and _lacks_position(participant):
            filled = _fill_defaults(experiment_id, path)
            return Advance(Move.DEFAULTS_FILLED if filled else Move.NONE)
        with reads.fresh(participant.agent_blocked_on is not None):  # a fix must be seen
            return _move(experiment_id, path, participant, read_at)
    except DocumentError as error:
        record_error(FUNCTION, error)
        if participant.is_agent:
            _mark_blocked(path, participant, error, read_at)
        return Advance(Move.BLOCKED)


def _lacks_position(p: ParticipantProfile) -> bool:
    return not (p.public_id and p.current_stage_id and p.current_cohort_id)


def default_public_id(private_id: str) -> str:
    """DL's convention (the id's first 8 characters, for mediators) made unique within the
    experiment: per-participant answers are keyed by the public id, and ``zoeteam1-A`` and
    ``zoeteam1-B`` shared one. A longer id gets a digest of the whole id after its first 8
    characters (not the whole id: the private id is not shown to other participants)."""
    if len(private_id) <= 8:
        return private_id
    return f"{private_id[:8]}-{hashlib.sha256(private_id.encode()).hexdigest()[:10]}"


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

    def body(transaction: firestore.Transaction) -> bool:
        raw = store.snapshot_data(path, transaction) or {}
        defaults: dict[str, Any] = {
            "type": "participant",
            "privateId": private_id,
            "publicId": default_public_id(private_id),
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


def _blocked_on(error: DocumentError) -> dict[str, str]:
    return {
        "document": error.blocked_on,
        "field": error.field,
        "reason": error.reason,
        "errorId": error_id(error),
    }


def _already_blocked_on(participant: ParticipantProfile, error: DocumentError) -> bool:
    marked = participant.agent_blocked_on or {}
    return all(marked.get(k) == v for k, v in _blocked_on(error).items())


def _mark_blocked(
    path: str, participant: ParticipantProfile, error: DocumentError, read_at: Any
) -> None:
    """Say on the agent what stops it; writing that document wakes it, and its next move
    marks the error record resolved. Written only on the participant as read (``read_at``):
    one that changed since (read beside the lease, before another move) is decided again on
    its own update."""
    if not _already_blocked_on(participant, error):
        blocked = {**_blocked_on(error), "since": now()}
        option = store.db().write_option(last_update_time=read_at) if read_at else None
        with contextlib.suppress(gexc.FailedPrecondition, gexc.NotFound):
            store.ref(path).update(
                ParticipantProfile.fields(agent_blocked_on=blocked), option=option
            )


def _move(
    experiment_id: str, path: str, participant: ParticipantProfile, read_at: Any = None
) -> Advance:
    """``read_at``: when the participant was read (its update time): the move is written
    conditional on it, without a transaction, unless it changed since."""
    if not participant.is_agent:
        return Advance(Move.NONE, _human_position(experiment_id, participant))
    if roles.is_inactive(participant):
        return Advance(Move.NONE)  # present, never moves: never a model call
    status = participant.current_status
    if status != ParticipantStatus.ATTENTION_CHECK and participant.timestamps.end_experiment:
        return Advance(Move.NONE)
    if status == ParticipantStatus.ATTENTION_CHECK:
        resolved = moves.commit(path, participant, _resolve_attention_check, read_at=read_at)
        return Advance(Move.ATTENTION_CHECK_RESOLVED if resolved else Move.NONE)
    experiment, stage = _load_position(experiment_id, participant)
    if status == ParticipantStatus.TRANSFER_PENDING:
        mutation = _accept_transfer(experiment, stage)
        moved = moves.commit_move(path, participant, mutation, read_at=read_at)
        if moved is None:
            return Advance(Move.NONE)
        moves.after_move(experiment_id, path, moved)
        return Advance(Move.TRANSFER_ACCEPTED)
    if status != ParticipantStatus.IN_PROGRESS:
        return Advance(Move.NONE)
    return _progress(experiment, participant, stage, read_at)


def _human_position(experiment_id: str, participant: ParticipantProfile) -> ChatEntry | None:
    """A human makes its own moves; it only counts for the unlock check, and a human in an
    unlocked chat has the mediators open it."""
    cohort_id, stage_id = participant.current_cohort_id, participant.current_stage_id
    if not (cohort_id and stage_id and participant.timestamps.end_experiment is None):
        return None
    if roles.uses_treatment(participant) or roles.current(participant, experiment_id).represented:
        experiment = store.read(Experiment, store.experiment_path(experiment_id))
        spawn.arrive(experiment, participant)
    cohort_lock.unlock_if_ready(experiment_id, cohort_id, stage_id)
    chat = cohort_lock.unlocked_chat_stage(experiment_id, cohort_id, stage_id)
    return ChatEntry(cohort_id, chat, participant) if chat is not None else None


def _read_cohort(experiment_id: str, participant: ParticipantProfile) -> CohortConfig:
    path = store.participant_path(experiment_id, participant.private_id)
    if not participant.current_cohort_id:
        raise DocumentError(path, "currentCohortId", "the participant has no cohort")
    cohort_path = store.cohort_path(experiment_id, participant.current_cohort_id)
    data = store.snapshot_data(cohort_path)
    if data is None:
        raise DocumentError(
            path,
            "currentCohortId",
            f"cohort {participant.current_cohort_id!r} does not exist",
            blocked_on=cohort_path,
        )
    return store.parse(CohortConfig, cohort_path, data)


def _warn_unknown_kind(experiment_id: str, stage: StageConfig) -> None:
    if stage.kind not in KNOWN_KINDS:
        reason = f"unknown stage kind {stage.kind!r}: agents take no action there and advance"
        error = DocumentError(store.stage_path(experiment_id, stage.id), "kind", reason)
        record_error(FUNCTION, error, severity="warning")


def _start(path: str, participant: ParticipantProfile, read_at: Any) -> bool:
    """Stamp the start timestamps if they are missing (a move of its own)."""
    return moves.needs_start_timestamps(participant) and moves.commit(
        path, participant, lambda p, _t: moves.fill_start_timestamps(p), read_at=read_at
    )


@dataclasses.dataclass(frozen=True)
class _Changed:
    """The participant as read under the lease, changed since the read beside it."""

    participant: ParticipantProfile
    read_at: Any


def _answer_once(
    experiment: Experiment,
    cohort: CohortConfig,
    participant: ParticipantProfile,
    stage: StageConfig,
    read_at: Any,
) -> StageAnswer | ProfileBase | Advance | _Changed | None:
    """The model's answer to the stage (None: answered before, or the model kept answering
    invalidly), or the move's outcome when the model could not be asked, or the participant
    read again under the lease when it changed since the read the move was decided on
    (``_Changed``: the move is decided again, and the model not asked here). What an answer
    reads first (the participant again, an existing answer, the persona's prompt, the
    creator's keys, what the prompt shows) is read in one round trip."""
    path = store.participant_path(experiment.id, participant.private_id)
    with reads.ahead():
        _read_for_answer(experiment, cohort, participant, stage)
        if _beside_lease.get():
            fresh, fresh_at = store.read_versioned(ParticipantProfile, path)
            _beside_lease.set(False)
            if fresh_at != read_at:
                return _Changed(fresh, fresh_at)
        if _existing_answer(experiment.id, participant, stage):
            return None
        try:
            return _answer(experiment, cohort, participant, stage)
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
            return Advance(Move.FAILED)
        except AnswerFailed as error:
            # The model keeps answering invalidly: record why and move on without an answer,
            # rather than leave the agent (and a cohort waiting for it) stuck.
            reason = f"stage {stage.id!r}: {error}; the agent moved on without an answer"
            record_error(FUNCTION, DocumentError(path, "stageData", reason))
            return None


def _read_for_answer(
    experiment: Experiment,
    cohort: CohortConfig,
    participant: ParticipantProfile,
    stage: StageConfig,
) -> None:
    """Within an ``ahead`` block: read what answering reads first in one round trip, the
    documents in one batch and the prompt's queries beside it (``context_reads``)."""
    shown, queries = context_reads(experiment, cohort, participant, stage)
    path = store.participant_path(experiment.id, participant.private_id)
    again = [path] if _beside_lease.get() else []
    wanted = [*again, *_answer_documents(experiment, participant, stage), *shown]
    reads.all_together([lambda: reads.batch(wanted), *queries])


def _answer_documents(
    experiment: Experiment, participant: ParticipantProfile, stage: StageConfig
) -> list[str]:
    persona = participant.agent_config.agent_id if participant.agent_config else ""
    return [
        store.stage_data_path(experiment.id, participant.private_id, stage.id),
        persona_prompt_path(experiment.id, persona, stage.id) if persona else "",
        creator_keys_path(experiment) or "",
    ]


def _progress(
    experiment: Experiment, participant: ParticipantProfile, stage: StageConfig, read_at: Any
) -> Advance:
    path = store.participant_path(experiment.id, participant.private_id)
    cohort = _read_cohort(experiment.id, participant)
    _warn_unknown_kind(experiment.id, stage)
    if not cohort.stage_unlock_map.get(stage.id):
        started = _start(path, participant, read_at)
        cohort_lock.unlock_if_ready(experiment.id, cohort.id, stage.id)  # its trigger wakes us
        return Advance(Move.STARTED if started else Move.WAITING_LOCKED)
    action = agent_action(stage)
    if action == AgentAction.WAIT:
        started = _start(path, participant, read_at)
        entered = (
            ChatEntry(cohort.id, stage, participant)
            if isinstance(stage, ConversationStage)
            else None
        )
        return Advance(Move.STARTED if started else Move.WAITING, entered)
    answer = None
    if action == AgentAction.ANSWER:
        answered = _answer_once(experiment, cohort, participant, stage, read_at)
        if isinstance(answered, _Changed):  # moved meanwhile: decide on the read under the lease
            return _move(experiment.id, path, answered.participant, answered.read_at)
        if isinstance(answered, Advance):
            return answered
        answer = answered
    completion = moves.completion(experiment, participant, answer)
    moved = moves.commit_move(path, participant, completion, read_at=read_at)
    if moved is None:
        return Advance(Move.NONE)
    moves.after_move(experiment.id, path, moved, cohort)
    last = experiment.next_stage_id(stage.id) is None
    return Advance(Move.FINISHED if last else Move.STAGE_COMPLETED)
