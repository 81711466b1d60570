"""Starting a debate: categories (one model call for the entries without one), agents packed
by the token budget, and the first layer (its clusters and their opening rounds), created once."""

from __future__ import annotations

from typing import Any

from functions import store, transactions
from functions.agents.model_call import AnswerFailed
from functions.debate import asking, docs, failing, user
from shared.debate import loading, naming, packing
from shared.debate.kits import Kit
from shared.debate.models import Debate, DebateStatus, Layer, Round, StatementKind
from shared.llm import ModelError
from shared.models import DocumentError, now

BATCH = 400


START = "start"
"""The start's lease id."""


def start(debate_id: str) -> None:
    """Plan and create the first layer, unless it exists (a duplicate or a touch): a unit of
    work whose end fails the debate."""
    failing.run(debate_id, START, docs.debate(debate_id), lambda: _start(debate_id))


def started(debate_id: str) -> bool:
    return bool(store.ref(docs.layer(debate_id, naming.layer_id(1))).get().exists)


def _planned(debate_id: str) -> tuple[Debate, Kit] | None:
    """The debate and its user functions; None (FAILED, with a record) when its document
    cannot be run as written (a field, a user function's name, a data entry without data or
    too large for the leaf agents: ``loading``'s checks): a retry would meet the same error."""
    try:
        debate = docs.read_debate(debate_id)
        kit = user.kit(debate, debate_id)
        packing.check(debate, loading.entry_field(kit.prompts), docs.debate(debate_id))
        return debate, kit
    except DocumentError as error:
        if error.document != docs.debate(debate_id):
            raise
        failing.refuse(debate_id, error)
        return None


def _categorized(debate_id: str, debate: Debate, kit: Kit) -> list[dict[str, Any]] | None:
    """The entries with their categories; None (FAILED, with a record) when the model never
    answered validly; a failing provider is raised, for the unit to try again."""
    try:
        return categorize(debate_id, debate, kit.prompts)
    except (AnswerFailed, ModelError) as error:
        if isinstance(error, ModelError) and error.retryable:
            raise
        reason = f"no categories: {error}"
        failing.refuse(debate_id, DocumentError(docs.debate(debate_id), "categories", reason))
        return None


def _start(debate_id: str) -> None:
    if started(debate_id):
        return
    planned = _planned(debate_id)
    if planned is None or planned[0].paused or planned[0].status == DebateStatus.FAILED:
        return
    debate, kit = planned
    data = _categorized(debate_id, debate, kit)
    if data is None:
        return
    first = packing.first_layer(debate, data, loading.entry_field(kit.prompts))
    for i in range(0, len(first.agents), BATCH):  # immutable once written: plain sets
        batch = store.batch()
        for agent in first.agents[i : i + BATCH]:
            batch.set(store.ref(docs.agent(debate_id, agent.name)), agent.to_firestore())
        batch.commit()

    layer = Layer(id=naming.layer_id(1), index=1, clusters=[c.id for c in first.clusters])
    kind = StatementKind.OPENING

    def body(transaction: store.Transaction) -> None:
        layer_ref = store.ref(docs.layer(debate_id, layer.id))
        if layer_ref.get(transaction=transaction).exists:
            return
        for cluster in first.clusters:
            transaction.create(
                store.ref(docs.cluster(debate_id, cluster.id)), cluster.to_firestore()
            )
            opening = Round(
                id=naming.round_id(cluster.id, 0),
                cluster_id=cluster.id,
                layer=1,
                index=0,
                kind=kind,
                agents=cluster.members,
                created_at=now(),
            )
            transaction.create(
                store.ref(docs.round_(debate_id, opening.id)), opening.to_firestore()
            )
        transaction.create(layer_ref, layer.to_firestore())
        transaction.update(
            store.ref(docs.debate(debate_id)),
            Debate.fields(status=DebateStatus.RUNNING.value, started_at=store.SERVER_TIMESTAMP),
        )

    transactions.run(body)


def categorize(debate_id: str, debate: Debate, prompts: Any) -> list[dict[str, Any]]:
    """Every entry with a category; one model call for those without (validated: no entry lost
    or invented, only allowed categories)."""
    todo = packing.uncategorized(debate.data)
    if not todo:
        return packing.categorized(debate.data, {})
    keys = [f"e{i}" for i in todo]
    schema = packing.category_schema(keys, debate.categories, debate.max_categories)
    prompt = prompts.categorize(
        {f"e{i}": debate.data[i] for i in todo}, debate.categories, debate.max_categories
    )
    chosen = asking.ask(
        debate_id,
        debate,
        f"{debate.name}_Categorizer",
        "categories",
        prompt,
        schema,
        lambda reply: packing.check_categories(
            reply, keys, debate.categories, debate.max_categories
        ),
    )
    return packing.categorized(debate.data, chosen)
