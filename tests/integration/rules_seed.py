"""The people and documents of the security rules matrix.

Experiment ``e1`` (private, created by alice, shared with carol) has two cohorts; participant pat
is in cohort c1 at the chat stage, quinn in c2, rae in c1 at the survey stage, sam in c1 and
finished. ``e2`` is bob's public experiment.
"""

from __future__ import annotations

from typing import Any

from tests.integration.rules_client import User

# Experimenters (allowlisted), keyed by role name.
ALICE = User("uid-alice", "Alice@Lab.org")  # creator of e1; mixed case on purpose
BOB = User("uid-bob", "bob@lab.org")  # another experimenter
CAROL = User("uid-carol", "carol@lab.org")  # in e1's permissions.readers
DANA = User("uid-dana", "dana@lab.org")  # admin
EVE = User("uid-eve", "eve@lab.org")  # allowlisted with isAdmin: false (not an admin)
# Not experimenters.
MALLORY = User("uid-mallory", "mallory@evil.org")  # signed in, not allowlisted
FAKE_ALICE = User("uid-fake", "alice@lab.org", email_verified=False)  # claims alice's email
# Participants of e1 (anonymous auth: uid == privateId).
PAT = User("uid-pat")
QUINN = User("uid-quinn")
RAE = User("uid-rae")
SAM = User("uid-sam")
STRANGER = User("uid-stranger")  # anonymous, participant of nothing

USERS: dict[str, User | None] = {
    "alice": ALICE,
    "bob": BOB,
    "carol": CAROL,
    "dana": DANA,
    "eve": EVE,
    "mallory": MALLORY,
    "fake_alice": FAKE_ALICE,
    "pat": PAT,
    "quinn": QUINN,
    "rae": RAE,
    "sam": SAM,
    "stranger": STRANGER,
    "anonymous": None,
}

E1 = "experiments/e1"
C1 = f"{E1}/cohorts/c1"
C2 = f"{E1}/cohorts/c2"
CHAT1 = f"{C1}/publicStageData/chat1"
PAT_P = f"{E1}/participants/uid-pat"
QUINN_P = f"{E1}/participants/uid-quinn"


def _participant(uid: str, public_id: str, cohort: str, stage: str, status: str) -> dict[str, Any]:
    return {
        "privateId": uid,
        "publicId": public_id,
        "type": "participant",
        "name": public_id,
        "currentCohortId": cohort,
        "currentStageId": stage,
        "currentStatus": status,
        "agentConfig": None,
    }


def message(message_id: str, sender: str, type_: str = "participant") -> dict[str, Any]:
    return {
        "id": message_id,
        "type": type_,
        "senderId": sender,
        "message": "hello",
        "discussionId": None,
        "profile": {"name": sender, "avatar": "🐱", "pronouns": None},
    }


def documents() -> dict[str, dict[str, Any]]:
    stage_ids = ["survey1", "chat1"]
    return {
        "allowlist/alice@lab.org": {},
        "allowlist/bob@lab.org": {},
        "allowlist/carol@lab.org": {},
        "allowlist/dana@lab.org": {"isAdmin": True},
        "allowlist/eve@lab.org": {"isAdmin": False},
        "experimenterData/alice@lab.org": {"apiKeys": {"geminiApiKey": "secret"}},
        "experimenterData/uid-bob": {"apiKeys": {"geminiApiKey": "bob-secret"}},
        E1: {
            "id": "e1",
            "metadata": {"name": "e1", "creator": "alice@lab.org"},
            "permissions": {"visibility": "private", "readers": ["carol@lab.org"]},
            "stageIds": stage_ids,
        },
        "experiments/e2": {
            "id": "e2",
            "metadata": {"name": "e2", "creator": "bob@lab.org"},
            "permissions": {"visibility": "public", "readers": []},
            "stageIds": stage_ids,
        },
        f"{E1}/stages/survey1": {"id": "survey1", "kind": "survey", "questions": []},
        f"{E1}/stages/chat1": {"id": "chat1", "kind": "chat"},
        C1: {"id": "c1", "stageUnlockMap": {"survey1": True, "chat1": True}},
        C2: {"id": "c2", "stageUnlockMap": {"survey1": True, "chat1": True}},
        CHAT1: {"id": "chat1", "kind": "chat", "currentDiscussionId": None},
        f"{CHAT1}/chats/m1": message("m1", "pub-pat"),
        f"{CHAT1}/triggerLogs/m1-participant": {"id": "m1-participant"},
        f"{C1}/publicStageData/survey1": {"id": "survey1", "kind": "survey"},
        f"{C2}/publicStageData/chat1": {"id": "chat1", "kind": "chat"},
        f"{C2}/publicStageData/chat1/chats/m2": message("m2", "pub-quinn"),
        PAT_P: _participant("uid-pat", "pub-pat", "c1", "chat1", "IN_PROGRESS"),
        QUINN_P: _participant("uid-quinn", "pub-quinn", "c2", "chat1", "IN_PROGRESS"),
        f"{E1}/participants/uid-rae": _participant(
            "uid-rae", "pub-rae", "c1", "survey1", "IN_PROGRESS"
        ),
        f"{E1}/participants/uid-sam": _participant("uid-sam", "pub-sam", "c1", "chat1", "SUCCESS"),
        f"{E1}/participants/agent-1": {
            **_participant("agent-1", "pub-agent", "c1", "chat1", "IN_PROGRESS"),
            "agentConfig": {"agentId": "persona-1", "promptContext": "You are a confederate."},
        },
        f"{PAT_P}/stageData/survey1": {"id": "survey1", "kind": "survey", "answerMap": {}},
        f"{PAT_P}/stageData/chat1/privateChats/pm1": message("pm1", "pub-pat"),
        f"{QUINN_P}/stageData/survey1": {"id": "survey1", "kind": "survey", "answerMap": {}},
        f"{E1}/mediators/med-1": {"privateId": "med-1", "currentCohortId": "c1"},
        f"{E1}/agentParticipants/persona-1": {"id": "persona-1", "name": "Riley"},
        f"{E1}/agentParticipants/persona-1/prompts/survey1": {"id": "survey1", "prompt": []},
        f"{E1}/agentMediators/persona-m": {"id": "persona-m", "name": "Moderator"},
        f"{E1}/agentMediators/persona-m/prompts/chat1": {"id": "chat1", "prompt": []},
        f"{E1}/logs/log-1": {"status": "SUCCESS", "prompt": "..."},
        f"{E1}/errors/err-1": {"document": f"{E1}/stages/chat1", "reason": "bad"},
        "experimentTemplates/t1": {"id": "t1", "permissions": {"visibility": "public"}},
    }
