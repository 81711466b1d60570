"""The persona bank (Deliberate Lab's PR #1171): personas stored once per experiment under
``experiments/{e}/personas/{id}``, keyed by the match hash of the round's variables
(``shared.treatment.match_hash``), claimed by the agents a treatment adds so that the same
condition gets the same kind of agents across cohorts.

A persona is claimed at most once per cohort: the claim and the agent that uses it are one
transaction (the candidates read by a query in it, the chosen persona's ``usageCount``,
``usedBy`` and ``cohorts`` updated, the agent created), so concurrent cohorts and duplicate
deliveries neither claim one persona twice in a cohort nor leave a claim without its agent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import firestore

from functions import store, transactions
from shared import paths, treatment
from shared.models import ParticipantProfile

COLLECTION = "personas"


def collection(experiment_id: str) -> firestore.CollectionReference:
    return store.db().collection(
        f"{paths.build(paths.EXPERIMENT, experimentId=experiment_id)}/{COLLECTION}"
    )


def persona_id(match: str, content: str) -> str:
    """A stored persona's id follows from its hash and content: storing it again is a no-op."""
    return f"{match[:16]}-{hashlib.sha256(content.encode()).hexdigest()[:12]}"


def store_persona(
    experiment_id: str, variables: Mapping[str, Any], content: str, **fields: Any
) -> tuple[str, bool]:
    """Store a persona for the round ``variables`` (the round's resolved variables, as the PR's
    generator hashes them); (its id, whether this call stored it)."""
    match = treatment.match_hash(variables)
    pid = persona_id(match, content)
    data = {
        **fields,
        "id": pid,
        "hash": match,
        "variables": dict(variables),
        "content": content,
        "usageCount": 0,
        "usedBy": [],
        "cohorts": [],
        "createdAt": firestore.SERVER_TIMESTAMP,
    }
    try:
        collection(experiment_id).document(pid).create(data)
    except (gexc.AlreadyExists, gexc.Conflict):
        return pid, False
    return pid, True


def create_claiming(
    experiment_id: str, match: str, agent: ParticipantProfile, claimant: str
) -> bool:
    """Create ``agent`` with a persona of the bank for ``match`` that its cohort has not claimed
    (the least used; ties broken by ``claimant``, the participant it is spawned beside), in one
    transaction; without one left, create it as it is. True if this call created it."""
    agent_ref = store.ref(store.participant_path(experiment_id, agent.private_id))
    cohort = agent.current_cohort_id
    query = collection(experiment_id).where(filter=firestore.FieldFilter("hash", "==", match))

    def body(transaction: firestore.Transaction) -> bool:
        if agent_ref.get(transaction=transaction).exists:
            return False
        candidates = [
            {**(s.to_dict() or {}), "id": s.id}
            for s in query.get(transaction=transaction)
            if cohort not in ((s.to_dict() or {}).get("cohorts") or [])
        ]
        chosen = treatment.select_to_claim(candidates, claimant)
        data = agent.model_copy(deep=True)
        if chosen is not None and data.agent_config is not None:
            persona = next(c for c in candidates if c["id"] == chosen)
            config = data.agent_config
            config.persona_hash, config.persona_id = match, chosen
            config.prompt_context = str(persona.get("content") or "")  # the bank's persona
            data.name = str(persona.get("name") or data.name or "") or None
            transaction.update(
                collection(experiment_id).document(chosen),
                {
                    "usageCount": firestore.Increment(1),
                    "usedBy": firestore.ArrayUnion([claimant]),
                    "cohorts": firestore.ArrayUnion([cohort]),
                },
            )
        transaction.create(agent_ref, data.to_firestore())
        return True

    return transactions.run(body)
