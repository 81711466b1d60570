"""The people and documents of the security rules matrix.

Experiment ``e1`` (private, created by alice, shared with carol) has stages survey1, ranking1,
chat1 (threads d1, d2; d1 current in c1), pchat1 (private chat) and survey2 (locked in c1), and
two cohorts. Participants: pat in c1 at chat1 (survey1 and ranking1 completed), quinn in c2 at
chat1, rae in c1 at survey1, tia in c1 at ranking1 (survey1 reached but not completed), uma in
c1 at pchat1, vic in c1 at the locked survey2, sam in c1 and finished. ``e2`` is bob's public
experiment. Gina is an experimenter by custom claim only (no allowlist entry).

Owned documents: society ``s1`` is gina's (creator by uid), ``s2`` alice's (by email, shared
with carol); debate ``d1``, conversation ``cv1`` and workflow ``w1`` are alice's (shared with
carol), debate ``d2`` bob's, workflow ``w2`` bob's and public.
"""

from __future__ import annotations

import datetime
from typing import Any

from tests.integration.rules_client import SERVER_TIME, User

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
TIA = User("uid-tia")
UMA = User("uid-uma")
VIC = User("uid-vic")
OLI = User("uid-oli")  # an observer (isObserver) at chat1 in c1
GINA = User("uid-gina", "gina@lab.org", claims={"role": "experimenter"})  # claim, no allowlist
# Players of society s1's human members 2 (hana) and 3 (ivo).
HANA = User("uid-hana")
IVO = User("uid-ivo")

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
    "tia": TIA,
    "uma": UMA,
    "vic": VIC,
    "oli": OLI,
    "gina": GINA,
    "hana": HANA,
    "ivo": IVO,
    "anonymous": None,
}

E1 = "experiments/e1"
C1 = f"{E1}/cohorts/c1"
C2 = f"{E1}/cohorts/c2"
CHAT1 = f"{C1}/publicStageData/chat1"
PAT_P = f"{E1}/participants/uid-pat"
QUINN_P = f"{E1}/participants/uid-quinn"
STAGE_IDS = ["survey1", "ranking1", "chat1", "pchat1", "survey2"]
PAST = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)

SURVEY1 = {
    "id": "survey1",
    "kind": "survey",
    "questions": [
        {
            "id": "t1",
            "kind": "text",
            "questionTitle": "Why?",
            "minCharCount": 2,
            "maxCharCount": 20,
        },
        {"id": "c1", "kind": "check", "questionTitle": "Agree?"},
        {"id": "mc1", "kind": "mc", "questionTitle": "Pick", "options": [{"id": "a"}, {"id": "b"}]},
        {"id": "s1", "kind": "scale", "questionTitle": "Rate", "lowerValue": 1, "upperValue": 7},
        *({"id": f"x{i}", "kind": "check", "questionTitle": "More?"} for i in range(4, 9)),
        {  # the 10th question, with 10 options: the most the rules check (their budget)
            "id": "mc10",
            "kind": "mc",
            "questionTitle": "Pick one of ten",
            "options": [{"id": f"o{i}"} for i in range(10)],
        },
    ],
}
RANKING1 = {
    "id": "ranking1",
    "kind": "ranking",
    "rankingType": "items",
    "rankingItems": [{"id": "i1"}, {"id": "i2"}, {"id": "i3"}],
}


def _participant(
    uid: str,
    public_id: str,
    cohort: str,
    stage: str,
    status: str,
    completed: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A human participant that reached ``stage`` through every stage before it."""
    reached = STAGE_IDS[: STAGE_IDS.index(stage) + 1]
    return {
        "privateId": uid,
        "publicId": public_id,
        "type": "participant",
        "name": public_id.removeprefix("pub-").title(),
        "avatar": "🐱",
        "pronouns": None,
        "currentCohortId": cohort,
        "currentStageId": stage,
        "currentStatus": status,
        "timestamps": {
            "readyStages": dict.fromkeys(reached, PAST),
            "completedStages": dict.fromkeys(completed, PAST),
        },
        "agentConfig": None,
    }


PROFILES = {
    "uid-pat": _participant(
        "uid-pat", "pub-pat", "c1", "chat1", "IN_PROGRESS", ("survey1", "ranking1")
    ),
    "uid-quinn": _participant(
        "uid-quinn", "pub-quinn", "c2", "chat1", "IN_PROGRESS", ("survey1", "ranking1")
    ),
    "uid-rae": _participant("uid-rae", "pub-rae", "c1", "survey1", "IN_PROGRESS"),
    "uid-tia": _participant("uid-tia", "pub-tia", "c1", "ranking1", "IN_PROGRESS"),
    "uid-uma": _participant(
        "uid-uma", "pub-uma", "c1", "pchat1", "IN_PROGRESS", ("survey1", "ranking1", "chat1")
    ),
    "uid-vic": _participant(
        "uid-vic", "pub-vic", "c1", "survey2", "IN_PROGRESS", tuple(STAGE_IDS[:4])
    ),
    "uid-sam": _participant("uid-sam", "pub-sam", "c1", "chat1", "SUCCESS"),
    "uid-oli": {
        **_participant("uid-oli", "pub-oli", "c1", "chat1", "IN_PROGRESS", ("survey1", "ranking1")),
        "isObserver": True,
    },
}


def profile_of(public_id: str) -> dict[str, Any]:
    """The display profile a participant's messages must carry: its stored one."""
    stored = next((p for p in PROFILES.values() if p["publicId"] == public_id), None)
    if stored is None:
        return {"name": public_id, "avatar": "🤖", "pronouns": None}
    return {key: stored[key] for key in ("name", "avatar", "pronouns")}


def message(
    message_id: str,
    sender: str,
    type_: str = "participant",
    discussion_id: str | None = "d1",
    **changes: Any,
) -> dict[str, Any]:
    """A message as a participant's client sends it, in thread ``discussion_id``."""
    return {
        "id": message_id,
        "type": type_,
        "senderId": sender,
        "message": "hello",
        "discussionId": discussion_id,
        "timestamp": SERVER_TIME,
        "profile": profile_of(sender),
        **changes,
    }


def stored_message(message_id: str, sender: str, discussion_id: str | None = "d1") -> dict:
    return {**message(message_id, sender, discussion_id=discussion_id), "timestamp": PAST}


def _unlocked(*stage_ids: str) -> dict[str, Any]:
    return {"stageUnlockMap": {s: s in stage_ids for s in STAGE_IDS}}


S1 = "societies/s1"
SOCIETY_SETTINGS = {
    "agents": 4,
    "humans": [2, 3],
    "humanPlayers": {"2": "uid-hana", "3": "uid-ivo"},
}


def _society_day(day: int, status: str) -> dict[str, Any]:
    settings = {**SOCIETY_SETTINGS, "actionsPerDay": 1}
    return {
        "day": day,
        "status": status,
        "acting": [1, 2, 3, 4],
        "humans": [2, 3],
        "settings": settings,
    }


def society_action(agent_id: int, day: int = 1, slot: int = 1, **extra: Any) -> dict[str, Any]:
    """A human member's action as its player's client writes it."""
    action = {"action": "work", "work_type": "farm", "hours": 4}
    return {"agentId": agent_id, "slot": slot, "day": day, "action": action, **extra}


def _society() -> dict[str, dict[str, Any]]:
    """Society s1: four members, 2 and 3 played by hana and ivo; day 1 open, day 2 closing
    (its deadline passed); ivo acted on day 1; member 1 messaged 2 and 4."""
    return {
        S1: {"id": "s1", "status": "running", "settings": SOCIETY_SETTINGS, "creator": "uid-gina"},
        **{
            f"{S1}/members/{i}": {"agentId": i, "day": 1, "displayName": f"Agent #{i}"}
            for i in (1, 2, 3)
        },
        f"{S1}/days/00001": _society_day(1, "open"),
        f"{S1}/days/00002": _society_day(2, "closing"),
        f"{S1}/days/00001/state/context": {"day": 1},
        f"{S1}/days/00001/state/votes": {"votes": {}},
        f"{S1}/days/00001/members/2": {"agentId": 2, "day": 1},
        f"{S1}/days/00001/members/1": {"agentId": 1, "day": 1},
        f"{S1}/days/00001/actions/3-1": society_action(3, source="human"),
        f"{S1}/posts/1": {"id": 1, "day": 1, "authorId": 1, "content": "hello"},
        f"{S1}/proposals/p1": {"id": "p1", "day": 1},
        f"{S1}/summaries/00001": {"day": 1},
        f"{S1}/messages/m-a": {
            "id": "m-a",
            "day": 1,
            "senderId": 1,
            "recipientId": 2,
            "content": "hi",
        },
        f"{S1}/messages/m-b": {
            "id": "m-b",
            "day": 1,
            "senderId": 1,
            "recipientId": 4,
            "content": "psst",
        },
        f"{S1}/errors/e1": {"reason": "bad"},
        f"{S1}/turnLeases/1-1": {"token": "t"},
        S2: {"id": "s2", "status": "running", "creator": "alice@lab.org", "permissions": SHARED},
        f"{S2}/errors/e1": {"reason": "bad"},
        f"{S2}/days/00001": _society_day(1, "open"),
    }


S2 = "societies/s2"
SHARED = {"visibility": "private", "readers": ["carol@lab.org"]}


def _owned() -> dict[str, dict[str, Any]]:
    """Debates, conversations and workflows of alice (shared with carol) and bob."""
    alices = {"creator": "alice@lab.org", "permissions": SHARED}
    return {
        "debates/d1": {"name": "d1", "data": [{"id": 1}], **alices},
        "debates/d1/agents/a1": {"name": "a1"},
        "debates/d2": {"name": "d2", "data": [{"id": 1}], "creator": "bob@lab.org"},
        "conversations/cv1": {"query": "why?", "workflowId": "w1", **alices},
        "conversations/cv1/steps/0": {"kind": "conductor"},
        "workflows/w1": {"name": "w1", **alices},
        "workflows/w1/agents/critic": {"name": "critic", "code": "def run(): ..."},
        "workflows/w2": {
            "name": "w2",
            "creator": "uid-bob",
            "permissions": {"visibility": "public", "readers": []},
        },
    }


JOURNAL_RUNS = (E1, S1, S2, "debates/d1", "debates/d2", "conversations/cv1")
"""Runs with a recorded model reply at ``{run}/journal/k1``."""


def recorded_call(run: str) -> dict[str, Any]:
    """A journal entry as functions/journal.py writes it."""
    return {
        "key": "k1",
        "modelName": "scripted",
        "description": f"a call of {run}",
        "stageId": "chat1",
        "agent": "agent-1",
        "text": "the model's reply",
        "toolCalls": [],
        "promptTokens": 10,
        "completionTokens": 4,
        "log": "log-1",
        "recordedAt": PAST,
        "expireAt": PAST + datetime.timedelta(days=90),
    }


def documents() -> dict[str, dict[str, Any]]:
    participants = {f"{E1}/participants/{uid}": data for uid, data in PROFILES.items()}
    return {
        **_society(),
        **_owned(),
        **{f"{run}/journal/k1": recorded_call(run) for run in JOURNAL_RUNS},
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
            "stageIds": STAGE_IDS,
        },
        "experiments/e2": {
            "id": "e2",
            "metadata": {"name": "e2", "creator": "bob@lab.org"},
            "permissions": {"visibility": "public", "readers": []},
            "stageIds": STAGE_IDS,
        },
        "experiments/e3": {
            "id": "e3",
            "metadata": {"name": "e3", "creator": "uid-gina"},
            "permissions": {"visibility": "private", "readers": []},
            "stageIds": [],
        },
        f"{E1}/stages/survey1": SURVEY1,
        f"{E1}/stages/ranking1": RANKING1,
        f"{E1}/stages/chat1": {
            "id": "chat1",
            "kind": "chat",
            "discussions": [{"id": "d1"}, {"id": "d2"}],
        },
        f"{E1}/stages/pchat1": {"id": "pchat1", "kind": "privateChat"},
        f"{E1}/stages/survey2": {"id": "survey2", "kind": "survey", "questions": []},
        C1: {"id": "c1", "metadata": {"creator": "alice@lab.org"}, **_unlocked(*STAGE_IDS[:4])},
        C2: {"id": "c2", "metadata": {"creator": "alice@lab.org"}, **_unlocked(*STAGE_IDS)},
        CHAT1: {"id": "chat1", "kind": "chat", "currentDiscussionId": "d1"},
        f"{CHAT1}/chats/m1": stored_message("m1", "pub-pat"),
        f"{CHAT1}/triggerLogs/m1-participant": {"id": "m1-participant"},
        f"{C1}/publicStageData/survey1": {"id": "survey1", "kind": "survey"},
        f"{C2}/publicStageData/chat1": {"id": "chat1", "kind": "chat", "currentDiscussionId": None},
        f"{C2}/publicStageData/chat1/chats/m2": stored_message("m2", "pub-quinn", None),
        **participants,
        f"{E1}/participants/agent-1": {
            **_participant("agent-1", "pub-agent", "c1", "chat1", "IN_PROGRESS"),
            "agentConfig": {"agentId": "persona-1", "promptContext": "You are a confederate."},
        },
        f"{PAT_P}/stageData/survey1": {
            "id": "survey1",
            "kind": "survey",
            "answerMap": {"s1": {"id": "s1", "kind": "scale", "value": 3}},
        },
        f"{PAT_P}/stageData/chat1": {"id": "chat1", "kind": "chat", "discussionTimestampMap": {}},
        f"{E1}/participants/uid-uma/stageData/pchat1/privateChats/pm1": stored_message(
            "pm1", "pub-uma", None
        ),
        f"{E1}/participants/uid-rae/stageData/survey1": {
            "id": "survey1",
            "kind": "survey",
            "answerMap": {},
        },
        f"{QUINN_P}/stageData/survey1": {"id": "survey1", "kind": "survey", "answerMap": {}},
        f"{E1}/mediators/med-1": {"privateId": "med-1", "currentCohortId": "c1"},
        f"{E1}/agentParticipants/persona-1": {"id": "persona-1", "name": "Riley"},
        f"{E1}/agentParticipants/persona-1/prompts/survey1": {"id": "survey1", "prompt": []},
        f"{E1}/agentMediators/persona-m": {"id": "persona-m", "name": "Moderator"},
        f"{E1}/agentMediators/persona-m/prompts/chat1": {"id": "chat1", "prompt": []},
        f"{E1}/logs/log-1": {"status": "SUCCESS", "prompt": "..."},
        f"{E1}/errors/err-1": {"document": f"{E1}/stages/chat1", "reason": "bad"},
        f"{E1}/roles/r1": {"id": "r1", "name": "Leader"},
        f"{PAT_P}/alerts/al1": {"id": "al1", "message": "help"},
        f"{E1}/participantPublicData/pub-pat": {"publicId": "pub-pat"},
        "experimentTemplates/t1": {"id": "t1", "permissions": {"visibility": "public"}},
        "experimentTemplates/t2": {
            "id": "t2",
            "metadata": {"creator": "uid-bob"},
            "permissions": {"visibility": "private", "readers": []},
        },
        "agentTemplates/a1": {
            "id": "a1",
            "metadata": {"creator": "uid-alice"},
            "permissions": {"visibility": "private", "readers": []},
        },
        "experimenters/alice@lab.org": {"id": "alice@lab.org", "name": "Alice"},
        "experimenters/alice@lab.org/apiKeys/k1": {"keyId": "k1", "hash": "ab", "salt": "cd"},
    }
