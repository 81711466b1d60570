"""Building an agent participant's prompt for a stage from Firestore: the persona's own prompt
config for the stage (for every stage kind; Deliberate Lab only reads it for chat) or the
default, rendered over the documents it refers to."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from functions import documents, reads, rooms, store
from functions.agents import cohort_lock
from functions.rooms import Room
from shared import paths
from shared.llm.protocol import MAX_PROMPT_CHARS
from shared.models import (
    ChatMessage,
    CohortConfig,
    DocumentError,
    Experiment,
    ExperimenterData,
    MediatorProfile,
    ParticipantProfile,
    PromptConfig,
    RankingStage,
    StageConfig,
    StageKind,
    SurveyPerParticipantStage,
    parse_document,
    parse_stage,
)
from shared.models.agent import PromptItemGroup, StageContextPromptItem
from shared.prompts import (
    PromptContext,
    PromptError,
    default_participant_prompt,
    render_prompt,
    schema_to_json_schema,
)
from shared.stages import ANSWER_SPECS, AnswerContext, Peer

T = TypeVar("T")
V = TypeVar("V")


@dataclasses.dataclass(frozen=True)
class StagePrompt:
    text: str
    schema: dict[str, Any] | None
    config: PromptConfig
    answer_context: AnswerContext


def persona_prompt_path(experiment_id: str, persona_id: str, stage_id: str) -> str:
    return paths.build(
        paths.AGENT_PARTICIPANT_PROMPT,
        experimentId=experiment_id,
        personaId=persona_id,
        stageId=stage_id,
    )


def prompt_config(
    experiment_id: str, participant: ParticipantProfile, stage: StageConfig
) -> tuple[PromptConfig, str | None]:
    """(config, path or None): the persona's prompt for this stage if it has one (read once
    per invocation: ``context_reads`` asks before the prompt is built)."""
    persona = participant.agent_config.agent_id if participant.agent_config else ""
    if persona:
        path = persona_prompt_path(experiment_id, persona, stage.id)
        data = reads.once(("prompt config", path), lambda: store.snapshot_data(path))
        if data is not None:
            data = {"id": stage.id, "type": stage.kind, **data}
            return parse_document(PromptConfig, path, data), path
    return default_participant_prompt(stage), None


def _stage_snapshots(experiment_id: str) -> list[Any]:
    """Every stage document of the experiment."""
    col = store.db().collection(paths.collection_of(paths.STAGE, experimentId=experiment_id))
    return list(col.get())


def _stages(experiment: Experiment, current: StageConfig) -> dict[str, StageConfig]:
    """The experiment's stages in order; a broken stage other than the current one is left out
    (its own error is recorded when an agent reaches it)."""
    snapshots = reads.current().ahead_or(("stages", experiment.id), _stage_snapshots, experiment.id)
    by_id = {stage.id: stage for stage in documents.valid(snapshots, parse_stage)}
    by_id[current.id] = current
    _note_listing(experiment.id, by_id.values())
    return {sid: by_id[sid] for sid in experiment.stage_ids if sid in by_id}


class _Loaded(Generic[T]):
    """Reads its documents on first use: a prompt renders only some of what it could show, and
    reading every member's profile and every public answer for each move made a 100-agent
    cohort's moves cost O(N) reads each."""

    def __init__(self, load: Callable[[], T]) -> None:
        self._load: Callable[[], T] | None = load
        self._value: T | None = None

    def _get(self) -> T:
        if self._load is not None:
            self._value, self._load = self._load(), None
        return self._value  # type: ignore[return-value]


class LazyMapping(_Loaded[Mapping[str, V]], Mapping[str, V]):
    def __getitem__(self, key: str) -> V:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())


class LazySequence(_Loaded[Sequence[V]], Sequence[V]):
    def __getitem__(self, index: Any) -> Any:
        return self._get()[index]

    def __len__(self) -> int:
        return len(self._get())


class _StageDocs:
    """The agent's answers and the cohort's public data, by stage id, read on first use: those
    of every stage up to the current one (what a prompt's stage context shows) in one round
    trip for both collections, any other stage's on its own. (Two collection queries before:
    one round trip more per prompt, and every document of either collection.)"""

    def __init__(self, stage_ids: Sequence[str], collections: Sequence[str]) -> None:
        self._stage_ids, self._collections = list(stage_ids), list(collections)
        self._read: dict[tuple[str, str], dict[str, Any] | None] | None = None

    def get(self, collection: str, stage_id: str) -> dict[str, Any] | None:
        if self._read is None:
            self._read = {}
            wanted = [f"{c}/{s}" for c in self._collections for s in self._stage_ids]
            held = [reads.current().take(path) for path in wanted]  # read ahead for the prompt
            snaps = [snap for snap in held if snap is not None]
            rest = [path for path, snap in zip(wanted, held, strict=True) if snap is None]
            if rest:
                snaps += store.db().get_all([store.ref(path) for path in rest])
            for snap in snaps:
                collection_path, _, sid = snap.reference.path.rpartition("/")
                self._read[(collection_path, sid)] = store.data_of(snap)
        key = (collection, stage_id)
        if key not in self._read:
            self._read[key] = store.snapshot_data(f"{collection}/{stage_id}")
        return self._read[key]

    def loaded(self, collection: str) -> list[str]:
        return [s for (c, s), data in (self._read or {}).items() if c == collection and data]


class _ByStage(Mapping[str, Mapping[str, Any]]):
    """One collection of ``_StageDocs`` as a mapping (iterating what was read)."""

    def __init__(self, docs: _StageDocs, collection: str) -> None:
        self._docs, self._collection = docs, collection

    def __getitem__(self, stage_id: str) -> Mapping[str, Any]:
        data = self._docs.get(self._collection, stage_id)
        if data is None:
            raise KeyError(stage_id)
        return data

    def __iter__(self) -> Iterator[str]:
        return iter(self._docs.loaded(self._collection))

    def __len__(self) -> int:
        return len(self._docs.loaded(self._collection))


def _shown_stages(experiment: Experiment, stage: StageConfig) -> list[str]:
    """Every stage up to and including the current one (all of them if it is not listed)."""
    order = experiment.stage_ids
    return order[: order.index(stage.id) + 1] if stage.id in order else list(order)


class _Chats(Mapping[str, Sequence[ChatMessage]]):
    """Group chats (no ``participant_id``), or that participant's private chats, by stage id;
    each read when the prompt shows it. The current stage's chat is the one the invocation
    already read (``rooms.seen_history``), and finding it needs no read of the other stages."""

    def __init__(
        self,
        room: Room,
        current: StageConfig,
        stages: Mapping[str, StageConfig],
    ) -> None:
        self._room, self._current, self._stages = room, current, stages
        self._kind = StageKind.PRIVATE_CHAT if room.participant_id else StageKind.CHAT
        self._read: dict[str, list[ChatMessage]] = {}

    def __getitem__(self, stage_id: str) -> list[ChatMessage]:
        stage = self._current if stage_id == self._current.id else self._stages.get(stage_id)
        if stage is None or stage.kind != self._kind:
            raise KeyError(stage_id)
        if stage_id not in self._read:
            room = dataclasses.replace(self._room, stage_id=stage_id)
            self._read[stage_id] = rooms.seen_history(room)
        return self._read[stage_id]

    def __iter__(self) -> Iterator[str]:
        return iter([sid for sid, stage in self._stages.items() if stage.kind == self._kind])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _private_chats(
    experiment_id: str,
    cohort_id: str,
    agent: ParticipantProfile | MediatorProfile,
    stage: StageConfig,
    stages: Mapping[str, StageConfig],
    partner: str | None,
) -> Mapping[str, Sequence[ChatMessage]]:
    owner = partner or (agent.private_id if isinstance(agent, ParticipantProfile) else "")
    if not owner:
        return {}
    return _Chats(Room(experiment_id, cohort_id, stage.id, owner), stage, stages)


def creator_keys_path(experiment: Experiment) -> str | None:
    """Where the experiment creator's API keys are, if it names a creator."""
    creator = experiment.metadata.creator
    if not creator or "/" in creator:
        return None
    return paths.build(paths.EXPERIMENTER_DATA, experimenterId=creator)


def creator_api_keys(experiment: Experiment) -> dict[str, Any] | None:
    """The experiment creator's API keys (Deliberate Lab bills the creator), if any."""
    path = creator_keys_path(experiment)
    data = store.snapshot_data(path) if path else None
    if path is None or data is None:
        return None
    creator = experiment.metadata.creator
    return parse_document(ExperimenterData, path, {"id": creator, **data}).api_keys


def _answer_collections(
    experiment_id: str, cohort_id: str, agent: ParticipantProfile | MediatorProfile
) -> list[str]:
    """Where a prompt's stage context shows answers from: the participant's own stageData
    (a mediator has none) and the cohort's publicStageData."""
    public = store.cohort_path(experiment_id, cohort_id) + "/publicStageData"
    if not isinstance(agent, ParticipantProfile):
        return [public]
    return [store.participant_path(experiment_id, agent.private_id) + "/stageData", public]


def _items(items: Sequence[Any]) -> Iterator[Any]:
    """A prompt's items, those of its groups included."""
    for item in items:
        yield item
        if isinstance(item, PromptItemGroup):
            yield from _items(item.items)


def _lists_members(stage: StageConfig) -> bool:
    """The stage's display (and, answering it, its schema) lists the cohort's members."""
    if isinstance(stage, RankingStage):
        return stage.ranking_type != "items"
    return isinstance(stage, SurveyPerParticipantStage) or stage.kind == StageKind.CHAT


_listing: dict[tuple[str | None, str], set[str]] = {}
"""Per instance and experiment, the stages seen to list the members (``_lists_members``), ids
only: a prompt that shows them reads the members beside its other reads. A guess: a stage
changed since costs the read it saved, or a read of the members when shown."""
LISTINGS_KEPT = 1_000


def _note_listing(experiment_id: str, stages: Iterable[StageConfig]) -> None:
    if len(_listing) >= LISTINGS_KEPT:
        _listing.clear()
    listing = _listing.setdefault((store.project_id(), experiment_id), set())
    for stage in stages:
        if _lists_members(stage):
            listing.add(stage.id)
        else:
            listing.discard(stage.id)


def context_reads(
    experiment: Experiment,
    cohort: CohortConfig,
    participant: ParticipantProfile,
    stage: StageConfig,
) -> tuple[list[str], list[Callable[[], object]]]:
    """What ``build_stage_prompt`` will read, so that it is read in one round trip before:
    documents (to read in a batch, ``reads.ahead``) and reads to run beside it. Decided on the
    prompt config once its document was read (by the move's first read, ``Seen``; otherwise
    it is the one document returned, and the rest is read when the prompt shows it): a stage
    context reads the answers of the stages it shows and, beyond the current stage, the
    experiment's stages; the members are read when a stage shown lists them (the current one,
    or one this instance saw do so, ``_listing``); anything else when shown."""
    persona = participant.agent_config.agent_id if participant.agent_config else ""
    path = persona_prompt_path(experiment.id, persona, stage.id) if persona else ""
    if path and not reads.current().knows(path, ("prompt config", path)):
        return [path], []
    config, _ = prompt_config(experiment.id, participant, stage)
    contexts = [i for i in _items(config.prompt) if isinstance(i, StageContextPromptItem)]
    shown = _shown_stages(experiment, stage) if contexts else [stage.id]
    collections = _answer_collections(experiment.id, cohort.id, participant)
    documents_read = [f"{c}/{s}" for c in collections for s in shown] if contexts else []
    beside: list[Callable[[], object]] = []
    if _shows_other_stages(experiment, stage, contexts):
        stages = ("stages", experiment.id)
        beside.append(lambda: _hold(stages, _stage_snapshots, experiment.id))
    _note_listing(experiment.id, [stage])
    if set(shown) & _listing.get((store.project_id(), experiment.id), set()):
        members = ("members shown", experiment.id, cohort.id)
        beside.append(lambda: _hold(members, _members_shown, experiment.id, cohort.id))
    return documents_read, beside


def _shows_other_stages(
    experiment: Experiment, stage: StageConfig, contexts: Sequence[StageContextPromptItem]
) -> bool:
    """Whether a stage context shows a stage other than the current one (it reads them all)."""
    earlier = stage.id in experiment.stage_ids and experiment.stage_ids[0] != stage.id
    return any(i.stage_id not in ("", stage.id) or (not i.stage_id and earlier) for i in contexts)


def _hold(key: tuple[str, ...], load: Callable[..., object], *args: str) -> None:
    """``load(*args)`` now, held for the prompt's read of ``key`` (``reads.Reads.ahead_or``)."""
    reads.current().hold_value(key, load(*args))


def _members_shown(experiment_id: str, cohort_id: str) -> list[ParticipantProfile]:
    """The members as a stage prompt shows them."""
    return cohort_lock.cohort_members(experiment_id, cohort_id, fields=cohort_lock.SHOWN_FIELDS)


def build_context(
    experiment: Experiment,
    cohort: CohortConfig,
    agent: ParticipantProfile | MediatorProfile,
    stage: StageConfig,
    members: Sequence[ParticipantProfile] | None = None,
    is_turn_based: bool = False,
    private_chat_of: str | None = None,
) -> PromptContext:
    """The documents a prompt refers to. A mediator's own answers are none; it sees the chat,
    and in a private chat the conversation with ``private_chat_of``."""
    e, c = experiment.id, cohort.id
    if members is None:
        members = LazySequence(lambda: cohort_lock.cohort_members(e, c))
    stages = LazyMapping(lambda: _stages(experiment, stage))
    collections = _answer_collections(e, c, agent)
    docs = _StageDocs(_shown_stages(experiment, stage), collections)
    is_participant = isinstance(agent, ParticipantProfile)
    return PromptContext(
        experiment=experiment,
        cohort=cohort,
        agent=agent,
        stage=stage,
        stages=stages,
        answers=_ByStage(docs, collections[0]) if is_participant else {},
        public_data=_ByStage(docs, collections[-1]),
        chat_messages=_Chats(Room(e, c, stage.id), stage, stages),
        private_messages=_private_chats(e, c, agent, stage, stages, private_chat_of),
        participants=members,
        is_turn_based=is_turn_based,
    )


def render(
    config: PromptConfig, config_path: str | None, ctx: PromptContext, schema: dict | None
) -> str:
    """Render, turning a template or prompt error into an error record on the prompt's document,
    and a prompt over the model's limit into one on the input that made it so (``runaway``)."""
    try:
        prompt = render_prompt(config, ctx, schema)
    except PromptError as error:
        where = config_path or store.stage_path(ctx.experiment.id, ctx.stage.id)
        raise DocumentError(where, "prompt", str(error)) from error
    if len(prompt) > MAX_PROMPT_CHARS and (cause := runaway(ctx, prompt)) is not None:
        raise cause
    return prompt


def _inputs(ctx: PromptContext) -> Iterator[tuple[str, str, str | None]]:
    """(document, field, text) of the inputs a prompt shows whole: the agent's own profile and
    persona context, and the stages' names and texts."""
    agent, e = ctx.agent, ctx.experiment.id
    if isinstance(agent, ParticipantProfile):
        own = store.participant_path(e, agent.private_id)
    else:
        own = paths.build(paths.MEDIATOR, experimentId=e, mediatorId=agent.private_id)
    for field in ("name", "avatar", "pronouns"):
        yield own, field, getattr(agent, field)
    yield (
        own,
        "agentConfig.promptContext",
        (agent.agent_config.prompt_context if agent.agent_config else None),
    )
    for stage in {ctx.stage.id: ctx.stage, **ctx.stages}.values():
        where, texts = store.stage_path(e, stage.id), stage.descriptions
        yield where, "name", stage.name
        yield where, "descriptions.primaryText", texts.primary_text
        yield where, "descriptions.infoText", texts.info_text


def runaway(ctx: PromptContext, prompt: str) -> DocumentError | None:
    """The input shown in ``prompt`` without which it would be within the model's limit (the
    longest such), as an error on its own document and field, the agent blocked on it, so
    that fixing it wakes the agent; None if no one input is to blame (the prompt's own limit
    check then says so)."""
    prompt_chars = len(prompt)
    over = prompt_chars - MAX_PROMPT_CHARS
    culprits = [
        (len(text), doc, field) for doc, field, text in _inputs(ctx) if text and text in prompt
    ]
    length, document, field = max(culprits, default=(0, "", ""))
    if length <= over:
        return None
    reason = (
        f"{length:,} characters make the prompt {prompt_chars:,}, over the "
        f"{MAX_PROMPT_CHARS:,} sent to a model: shorten it"
    )
    return DocumentError(document, field, reason)


def build_stage_prompt(
    experiment: Experiment,
    cohort: CohortConfig,
    participant: ParticipantProfile,
    stage: StageConfig,
) -> StagePrompt:
    config, config_path = prompt_config(experiment.id, participant, stage)
    key = ("members shown", experiment.id, cohort.id)
    members = LazySequence(
        lambda: reads.current().ahead_or(key, _members_shown, experiment.id, cohort.id)
    )
    peers = LazySequence(
        lambda: [
            Peer(m.public_id, m.display_name)
            for m in sorted(members, key=lambda m: m.public_id)
            if m.private_id != participant.private_id and m.public_id
        ]
    )
    answer_context = AnswerContext(participant=participant, peers=peers)
    ctx = build_context(experiment, cohort, participant, stage, members)
    schema = _response_schema(config, config_path, stage, answer_context)
    return StagePrompt(render(config, config_path, ctx, schema), schema, config, answer_context)


def _response_schema(
    config: PromptConfig, config_path: str | None, stage: StageConfig, ctx: AnswerContext
) -> dict[str, Any] | None:
    """The persona's own schema when its prompt config defines one; otherwise the stage answer
    spec's, which carries the bounds DL only writes into descriptions."""
    output = config.structured_output_config
    if config_path and output is not None and output.enabled and output.schema_ is not None:
        return schema_to_json_schema(output.schema_)
    spec = ANSWER_SPECS.get(stage.kind)
    return spec.schema(stage, ctx) if spec else None
