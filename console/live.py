"""The live experiment view's data: every agent's stage and status, chats, error records, model
calls and tokens per agent, read in one pass so the page shows one consistent picture."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from google.cloud import firestore
from pydantic import BaseModel

from emulator import model_choice
from shared import treatment


class AgentRow(BaseModel):
    path: str
    id: str
    kind: str
    """participant, human or mediator."""
    name: str
    stage: str
    stage_number: int
    status: str
    model: str
    runs_on: str
    calls: int = 0
    tokens: int = 0
    blocked_on: str = ""
    role: str = ""
    """Deliberate Lab's treatment roles: "observer", "represents <name>", "inactive persona"."""


class ChatRow(BaseModel):
    path: str
    stage: str
    thread: str
    who: str
    text: str
    time: float


class ErrorRow(BaseModel):
    path: str
    document: str
    field: str
    reason: str
    occurrences: int
    resolved: bool
    """Nothing is blocked on the document any more (the agents moved past it)."""


class ExperimentState(BaseModel):
    experiment_id: str
    name: str
    stages: list[str]
    agents: list[AgentRow]
    chats: list[ChatRow]
    errors: list[ErrorRow]


def _docs(db: firestore.Client, path: str) -> list[tuple[str, dict[str, Any]]]:
    return [(s.reference.path, s.to_dict() or {}) for s in db.collection(path).stream()]


def _group(db: firestore.Client, group: str, prefix: str) -> list[tuple[str, dict[str, Any]]]:
    """A collection group within one experiment (the emulator needs no index for this)."""
    found = db.collection_group(group).stream()
    return [
        (s.reference.path, s.to_dict() or {}) for s in found if s.reference.path.startswith(prefix)
    ]


def _usage(logs: list[tuple[str, dict[str, Any]]]) -> dict[str, tuple[int, int]]:
    """(calls, tokens) per agent id (participants' private id, mediators' id)."""
    totals: dict[str, tuple[int, int]] = {}
    for _, log in logs:
        who = log.get("privateId") or log.get("participantId") or log.get("agentId") or ""
        tokens = ((log.get("response") or {}).get("usage") or {}).get("totalTokens") or 0
        calls, spent = totals.get(who, (0, 0))
        totals[who] = (calls + 1, spent + int(tokens))
    return totals


def _agent(
    path: str, data: dict[str, Any], kind: str, stages: list[str], usage: dict[str, tuple[int, int]]
) -> AgentRow:
    doc_id = path.rsplit("/", 1)[-1]
    stage = str(data.get("currentStageId") or "")
    calls, tokens = usage.get(doc_id, (0, 0))
    model, runs_on = _model(data)
    return AgentRow(
        path=path,
        id=doc_id,
        kind=kind if data.get("agentConfig") or kind == "mediator" else "human",
        name=_name(data),
        stage=stage,
        stage_number=stages.index(stage) + 1 if stage in stages else 0,
        status=str(data.get("currentStatus") or ""),
        model=model,
        runs_on=runs_on,
        calls=calls,
        tokens=tokens,
        blocked_on=_blocked_on(data),
    )


def _roles(agents: list[AgentRow], docs: list[tuple[str, dict[str, Any]]]) -> list[AgentRow]:
    """Each participant's role, and who represents whom, by name."""
    by_private = {path.rsplit("/", 1)[-1]: data for path, data in docs}
    out = []
    for row, (_, data) in zip(agents, docs, strict=True):
        role = treatment.role_of(data)
        shown = {"observer": "observer", "inactive": "inactive persona"}.get(role, "")
        if role == "representative":
            observer = by_private.get(str((data.get("agentConfig") or {}).get("representativeOf")))
            shown = f"represents {_name(observer or {}) or 'an observer'}"
        out.append(row.model_copy(update={"role": shown}))
    return out


def _name(data: dict[str, Any]) -> str:
    return f"{data.get('avatar') or ''} {data.get('name') or data.get('publicId') or ''}".strip()


def _model(data: dict[str, Any]) -> tuple[str, str]:
    """The model the agent is configured with, and what it runs on here."""
    settings = (data.get("agentConfig") or {}).get("modelSettings") or {}
    api = str(settings.get("apiType") or "")
    runs_on = model_choice.runs_on(api, os.environ.get("DLAB_MODEL_OVERRIDE")) if api else ""
    return f"{api} {settings.get('modelName') or ''}".strip(), runs_on


def _blocked_on(data: dict[str, Any]) -> str:
    blocked = data.get("agentBlockedOn") or {}
    return str(blocked.get("document") or "") if isinstance(blocked, dict) else ""


def _chat(path: str, data: dict[str, Any]) -> ChatRow:
    profile = data.get("profile") or {}
    name = profile.get("name") or data.get("senderId") or ""
    stamp = data.get("timestamp")
    return ChatRow(
        path=path,
        stage=path.split("/")[5] if "/publicStageData/" in path else "private",
        thread=str(data.get("discussionId") or ""),
        who=f"{profile.get('avatar') or ''} {name}".strip() or str(data.get("type") or "system"),
        text=str(data.get("message") or ""),
        time=stamp.timestamp() if isinstance(stamp, datetime) else 0.0,
    )


def read_state(db: firestore.Client, experiment_id: str) -> ExperimentState:
    base = f"experiments/{experiment_id}"
    experiment = db.document(base).get().to_dict() or {}
    stages = [str(s) for s in experiment.get("stageIds") or []]
    usage = _usage(_docs(db, f"{base}/logs"))
    people = _docs(db, f"{base}/participants")
    agents = _roles([_agent(p, d, "participant", stages, usage) for p, d in people], people)
    agents += [_agent(p, d, "mediator", stages, usage) for p, d in _docs(db, f"{base}/mediators")]
    chats = [_chat(p, d) for p, d in _group(db, "chats", base + "/")]
    chats += [_chat(p, d) for p, d in _group(db, "privateChats", base + "/")]
    blocked = {a.blocked_on for a in agents if a.blocked_on}
    errors = [_error(p, d, blocked) for p, d in _docs(db, f"{base}/errors")]
    return ExperimentState(
        experiment_id=experiment_id,
        name=str((experiment.get("metadata") or {}).get("name") or experiment_id),
        stages=stages,
        agents=sorted(agents, key=lambda a: (a.kind, a.name, a.id)),
        chats=sorted(chats, key=lambda c: (c.time, c.path)),
        errors=errors,
    )


def _error(path: str, data: dict[str, Any], blocked: set[str]) -> ErrorRow:
    """Resolved: the backend saw the cause fixed (``resolvedAt``), or no agent is blocked on
    the document any more."""
    document = str(data.get("document") or "")
    return ErrorRow(
        path=path,
        document=document,
        field=str(data.get("field") or ""),
        reason=str(data.get("reason") or ""),
        occurrences=int(data.get("occurrences") or 1),
        resolved=data.get("resolvedAt") is not None or document not in blocked,
    )
