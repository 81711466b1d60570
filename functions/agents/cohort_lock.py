"""Stage locks: a cohort's stage unlocks when enough of its participants have reached it."""

from __future__ import annotations

from typing import Any

from google.cloud import firestore
from google.cloud.firestore_v1.base_query import And, Or
from google.cloud.firestore_v1.field_path import FieldPath

from functions import documents, errors, reads, store
from functions.agents import roles
from shared.models import (
    ACTIVE_STATUSES,
    CohortConfig,
    ConversationStage,
    DocumentError,
    ParticipantProfile,
    ParticipantStatus,
    StageConfig,
    parse_document,
)
from shared.stages.unlock import arrived, stage_ready


def cohort_members(
    experiment_id: str,
    cohort_id: str,
    transaction: firestore.Transaction | None = None,
    fields: list[str] | None = None,
    limit: int | None = None,
) -> list[ParticipantProfile]:
    """Active participants of the cohort plus those transferring into it (DL's count), in one
    query (an ``Or`` of the two; each alternative has its composite index); ``fields``: only
    these (a field mask: the rest of each profile keeps its default); ``limit``: at most these
    many (in document order)."""
    active = [s.value for s in ACTIVE_STATUSES]
    incoming = ParticipantStatus.TRANSFER_PENDING.value
    query = store.participants(experiment_id).where(
        filter=Or(
            [
                And(
                    [
                        firestore.FieldFilter("currentCohortId", "==", cohort_id),
                        firestore.FieldFilter("currentStatus", "in", active),
                    ]
                ),
                And(
                    [
                        firestore.FieldFilter("transferCohortId", "==", cohort_id),
                        firestore.FieldFilter("currentStatus", "==", incoming),
                    ]
                ),
            ]
        )
    )
    if fields is not None:
        query = query.select(fields)
    if limit is not None:
        query = query.limit(limit)
    return documents.valid(query.get(transaction=transaction), _parse_profile, id_field="privateId")


SHOWN_FIELDS = [
    "privateId",
    "publicId",
    "name",
    "avatar",
    "pronouns",
    "anonymousProfiles",
    "currentStatus",
    "currentCohortId",
    "transferCohortId",
]
"""What a participant's own stage prompt shows of the other members (names, avatars,
pronouns, anonymous profiles, public ids; the template variables are the agent's own): not
their timestamps or agent configs, which were most of each member's decoding."""


CHAT_SHOWN_FIELDS = [*SHOWN_FIELDS, "currentStageId", "agentConfig"]
"""What a chat prompt reads of the members: what it shows, who is at the chat's stage, and
whether each is an agent (a claim turn posts on its first read only in a cohort of agents)."""
_shown: reads.Recent[list[ParticipantProfile]] = reads.Recent(max_age_s=1.0)


def members_shown(experiment_id: str, cohort_id: str) -> list[ParticipantProfile]:
    """The members as a chat prompt shows them (``CHAT_SHOWN_FIELDS``), from a read this
    instance made in the last second if there is one (``reads.Recent``): every agent of a chat
    writes its prompt for the same message at once; then the same for the rest of the
    invocation (a turn whose model took a second does not read them again after it, a round
    trip on its reply's path). A prompt only shows them; the barrier and the thread's advance
    read them now."""
    fields = CHAT_SHOWN_FIELDS
    load = lambda: cohort_members(experiment_id, cohort_id, fields=fields)  # noqa: E731
    key = (experiment_id, cohort_id)
    return reads.once(("members shown", *key), lambda: _shown.recent(key, load))


def _unlock_fields(stage_id: str) -> list[str]:
    """What the unlock check reads of each member: at a wait-for-all barrier every arrival
    reads the whole cohort (N² profiles per barrier), and a profile's timestamps for every
    stage were most of the decoding."""
    return [
        "privateId",
        "currentStageId",
        "currentCohortId",
        "transferCohortId",
        "currentStatus",
        "agentConfig",
        "timestamps.startExperiment",
        FieldPath("timestamps", "readyStages", stage_id).to_api_repr(),
    ]


def _parse_profile(path: str, data: dict[str, Any]) -> ParticipantProfile:
    return parse_document(ParticipantProfile, path, data)


def unlock_if_ready(
    experiment_id: str, cohort_id: str, stage_id: str, *, known: CohortConfig | None = None
) -> bool:
    """Unlock the stage in the cohort if its condition holds; True if this call unlocked it.

    Called after the caller's own participant write committed, so of any participants arriving
    at once, the last check sees them all. Unlocking is monotonic (a stage is never locked
    again), so no transaction is needed: a transaction here would lock every member's document
    and make arrivals contend with each other. The write fires the cohort trigger, which wakes
    the agents waiting there.

    ``known``: the cohort as read earlier in the invocation; a stage it shows unlocked is
    unlocked still (monotonic), so the cohort is read again only when it does not.
    """
    if known is not None and known.stage_unlock_map.get(stage_id):
        return False
    cohort = store.read(CohortConfig, store.cohort_path(experiment_id, cohort_id))
    if cohort.stage_unlock_map.get(stage_id):
        return False
    stage = store.read_stage(experiment_id, stage_id)
    members = (
        [] if _open_to_all(stage) else _members_unless_one_waits(experiment_id, stage, cohort_id)
    )
    members = [m for m in members if roles.counts_for_unlock(m)]
    if not stage_ready(stage, members):
        _name_humans_never_stamped(experiment_id, stage, members)
        return False
    store.ref(store.cohort_path(experiment_id, cohort_id)).update(
        {FieldPath("stageUnlockMap", stage_id).to_api_repr(): True}
    )
    return True


FIRST_LOOK = 10
"""Members a wait-for-all check reads first: one not yet arrived among them settles it."""


def _members_unless_one_waits(
    experiment_id: str, stage: StageConfig, cohort_id: str
) -> list[ParticipantProfile]:
    """The members the unlock condition needs. At a wait-for-all barrier every arrival checks,
    and all but the last find someone missing: reading the whole cohort each time read N²
    profiles per barrier (10,000 at 100 agents). A first look at a few members settles most
    checks (early arrivals almost always find someone missing among them), and only a check
    that finds them all arrived reads the whole cohort; the members it returns then are the
    first look only, enough for ``stage_ready`` to say no."""
    fields = _unlock_fields(stage.id)
    if stage.progress.wait_for_all_participants:
        first = cohort_members(experiment_id, cohort_id, fields=fields, limit=FIRST_LOOK)
        waiting = [m for m in first if not arrived(stage, m) and roles.counts_for_unlock(m)]
        if len(first) < FIRST_LOOK or waiting:
            return first
    return cohort_members(experiment_id, cohort_id, fields=fields)


def _open_to_all(stage: StageConfig) -> bool:
    """No minimum and no waiting for everyone: ready whoever the members are."""
    progress = stage.progress
    return progress.min_participants == 0 and not progress.wait_for_all_participants


def unlocked_chat_stage(
    experiment_id: str, cohort_id: str, stage_id: str
) -> ConversationStage | None:
    """The stage, if it is a chat that is unlocked in the cohort."""
    data = store.snapshot_data(store.cohort_path(experiment_id, cohort_id)) or {}
    if not (data.get("stageUnlockMap") or {}).get(stage_id):
        return None
    stage = store.read_stage(experiment_id, stage_id)
    return stage if isinstance(stage, ConversationStage) else None


def _name_humans_never_stamped(
    experiment_id: str, stage: StageConfig, members: list[ParticipantProfile]
) -> None:
    """A human at the stage whose document lacks the arrival stamps DL's client writes (one
    written by hand in the console) counts as never arrived and would hold the stage locked for
    everyone: say which document and field. Writing them runs the unlock check again."""
    for member in members:
        if member.is_agent or member.current_stage_id != stage.id:
            continue
        ts = member.timestamps
        field = (
            "timestamps.startExperiment"
            if ts.start_experiment is None
            else f"timestamps.readyStages.{stage.id}"
            if stage.id not in ts.ready_stages
            else None
        )
        if field is not None:
            reason = (
                f"missing: this participant is at stage {stage.id!r} but counts as not arrived, "
                "which keeps the stage locked for the cohort; set it to the arrival time"
            )
            path = store.participant_path(experiment_id, member.private_id)
            errors.record_error(errors.current_function(), DocumentError(path, field, reason))
