"""The experiment download: one assembly of an experiment's documents, for the REST API's
``/export`` and ``/export/logs`` and for ``python -m tools.export`` (and the console).

Shaped as Deliberate Lab's ``ExperimentDownload`` (utils/src/data.ts): ``experiment``,
``stageMap``, ``participantMap`` (by public id: ``profile`` and ``answerMap``), ``cohortMap``
(``cohort``, ``dataMap``, ``chatMap`` of chat stages' messages in time order),
``agentMediatorMap`` and ``agentParticipantMap`` (``persona``, ``promptMap``) and ``alerts`` (by
participant private id), timestamps as ``{seconds, nanoseconds}``. What only this backend knows
is added beside theirs, never in place of it: ``errors`` (the experiment's error records),
``spend`` (the run's model calls, tokens and cost, functions/spend.py), ``roleMap`` (by public
id: ``role``, ``represents``, ``representedBy``; Deliberate Lab's treatment roles, PR #1171) and
``personaBank`` (the stored personas by id); each model log entry gains ``costUsd``.
"""

from __future__ import annotations

import datetime
from typing import Any

from google.cloud import firestore

from functions import spend, store
from shared import paths, treatment

Json = dict[str, Any]


def plain(value: Any) -> Any:
    """A Firestore value as JSON: timestamps as Deliberate Lab's ``{seconds, nanoseconds}``."""
    if isinstance(value, datetime.datetime):
        stamp = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
        seconds = int(stamp.timestamp() // 1)
        nanos = getattr(value, "nanosecond", 0) or value.microsecond * 1000
        return {"seconds": seconds, "nanoseconds": nanos}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if hasattr(value, "path") and hasattr(value, "id"):  # a document reference
        return value.path
    return value


def _documents(
    collection: str | firestore.Query | firestore.CollectionReference, *, raw: bool = False
) -> list[Json]:
    """The documents of a collection (its path) or query, each with its ``_id``; ``raw``: as
    Firestore gives them (to write back), else as JSON."""
    query = store.db().collection(collection) if isinstance(collection, str) else collection
    convert = (lambda d: d) if raw else plain
    return [convert(snap.to_dict() or {}) | {"_id": snap.id} for snap in query.stream()]


def _without_id(doc: Json) -> Json:
    return {k: v for k, v in doc.items() if k != "_id"}


def experiment_document(experiment_id: str, *, raw: bool = False) -> Json | None:
    snap = store.ref(paths.build(paths.EXPERIMENT, experimentId=experiment_id)).get()
    if not snap.exists:
        return None
    return (snap.to_dict() or {}) if raw else plain(snap.to_dict())


def _agents(experiment: str, collection: str, raw: bool) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for persona in _documents(f"{experiment}/{collection}", raw=raw):
        prompts = _documents(f"{experiment}/{collection}/{persona['_id']}/prompts", raw=raw)
        out[persona.get("id") or persona["_id"]] = {
            "persona": _without_id(persona),
            "promptMap": {p.get("id") or p["_id"]: _without_id(p) for p in prompts},
        }
    return out


def configuration(experiment_id: str, *, raw: bool = False) -> Json | None:
    """The experiment, its stages and agents (what ``GET /v1/experiments/{id}`` returns), or
    None when there is no such experiment; ``raw``: as stored, to write back (a fork)."""
    experiment = experiment_document(experiment_id, raw=raw)
    if experiment is None:
        return None
    base = paths.build(paths.EXPERIMENT, experimentId=experiment_id)
    stages = _documents(f"{base}/stages", raw=raw)
    return {
        "experiment": experiment,
        "stageMap": {s.get("id") or s["_id"]: _without_id(s) for s in stages},
        "agentMediatorMap": _agents(base, "agentMediators", raw),
        "agentParticipantMap": _agents(base, "agentParticipants", raw),
    }


def _participants(base: str) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for profile in _documents(f"{base}/participants"):
        answers = _documents(f"{base}/participants/{profile['_id']}/stageData")
        public_id = profile.get("publicId") or profile["_id"]
        out[public_id] = {
            "profile": _without_id(profile),
            "answerMap": {a.get("id") or a["_id"]: _without_id(a) for a in answers},
        }
    return out


def _cohorts(base: str) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for cohort in _documents(f"{base}/cohorts"):
        where = f"{base}/cohorts/{cohort['_id']}/publicStageData"
        data = {d.get("id") or d["_id"]: _without_id(d) for d in _documents(where)}
        chats = {
            stage_id: [
                _without_id(m)
                for m in _documents(
                    store.db().collection(f"{where}/{stage_id}/chats").order_by("timestamp")
                )
            ]
            for stage_id, public in data.items()
            if public.get("kind") == "chat"
        }
        out[cohort.get("id") or cohort["_id"]] = {
            "cohort": _without_id(cohort),
            "dataMap": data,
            "chatMap": chats,
        }
    return out


def _alerts(base: str) -> dict[str, list[Json]]:
    out: dict[str, list[Json]] = {}
    for alert in _documents(store.db().collection(f"{base}/alerts").order_by("timestamp")):
        out.setdefault(str(alert.get("participantId", "")), []).append(_without_id(alert))
    return out


def spend_totals(run: str) -> Json:
    totals = spend.totals(run)
    return {
        "calls": totals.calls,
        "promptTokens": totals.prompt_tokens,
        "completionTokens": totals.completion_tokens,
        "costUsd": totals.cost_usd,
    }


def experiment_download(experiment_id: str) -> Json | None:
    """The whole download, or None when there is no such experiment."""
    config = configuration(experiment_id)
    if config is None:
        return None
    base = paths.build(paths.EXPERIMENT, experimentId=experiment_id)
    participants = _participants(base)
    return {
        "experiment": config["experiment"],
        "stageMap": config["stageMap"],
        "participantMap": participants,
        "roleMap": treatment.role_map([p["profile"] for p in participants.values()]),
        "personaBank": {
            p.get("id") or p["_id"]: _without_id(p) for p in _documents(f"{base}/personas")
        },
        "cohortMap": _cohorts(base),
        "agentMediatorMap": config["agentMediatorMap"],
        "agentParticipantMap": config["agentParticipantMap"],
        "alerts": _alerts(base),
        "errors": [_without_id(e) for e in _documents(f"{base}/errors")],
        "spend": spend_totals(base),
    }


def _cost(entry: Json) -> float:
    usage = (entry.get("response") or {}).get("usage") or {}
    counted = spend.counts(
        str(entry.get("modelName", "")),
        int(usage.get("promptTokens") or 0),
        int(usage.get("completionTokens") or 0),
    )
    return counted["costUsd"]


def experiment_logs(experiment_id: str) -> list[Json] | None:
    """The experiment's model log entries in time order, each with its ``costUsd``; None when
    there is no such experiment."""
    if experiment_document(experiment_id) is None:
        return None
    base = paths.build(paths.EXPERIMENT, experimentId=experiment_id)
    logs = [
        _without_id(e)
        for e in _documents(store.db().collection(f"{base}/logs").order_by("createdTimestamp"))
    ]
    return [
        entry | {"costUsd": _cost(entry)} if entry.get("type") == "model" else entry
        for entry in logs
    ]
