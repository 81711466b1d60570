"""firestore.rules on the real emulator: who may read and write what (see rules_seed for the cast).

The rules are loaded into their own project (``demo-rules``) on the session's emulator, so the
runtime's project is unaffected. Requests go over the REST API with unsigned mock ID tokens;
allowed means HTTP 200, denied means 403. Writes are commits as a client SDK sends them, with
``serverTimestamp()`` as a REQUEST_TIME transform (rules_client.SERVER_TIME).

Every attack of issue 12 is a denied case (forged profile or sender, future or client-clock
timestamp, 900 KB and 4001-character messages, backend markers, another thread, answers for a
stage not reached, locked or completed, out-of-bounds, invented questions, options and items,
the experiment and cohort documents with the creator's email), next to the legitimate writes of
a human participant (posting, answering at the bounds, marking ready) as allowed cases.

Both rulesets run the whole matrix (tools/deploy/rulesets.py): the default one (firestore.rules)
and the strict one (firestore.strict.rules), each in its own project. A case gives one verdict,
or a second one (``strict``) where the strict ruleset differs: the reads Deliberate Lab's web
app makes without signing in (issue 28 row 16). Issue 28 row 15: societies, debates,
conversations, workflows and an experiment's roles belong to their owner.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from google.cloud import firestore

from tests.integration import rules_seed as s
from tests.integration.rules_client import FirestoreRest, Op
from tools import load_workflow
from tools.deploy import rulesets
from tools.deploy.rulesets import Ruleset
from tools.society import client as society_client

pytestmark = pytest.mark.emulator

PROJECTS: dict[Ruleset, str] = {"default": "demo-rules", "strict": "demo-rules-strict"}
ALLOW, DENY = True, False


class Case(NamedTuple):
    who: str
    op: Op
    path: str
    allowed: bool
    data: dict[str, Any] | None = None
    where: tuple[str, Any] | None = None
    note: str = ""
    strict: bool | None = None
    """The strict ruleset's verdict, where it differs from ``allowed``."""

    def expected(self, ruleset: Ruleset) -> bool:
        return self.allowed if ruleset == "default" or self.strict is None else self.strict

    def id(self) -> str:
        verdict = "allow" if self.allowed else "deny"
        verdict += (
            "" if self.strict is None else ("-strict-allow" if self.strict else "-strict-deny")
        )
        parts = [self.who, self.op, self.path.replace("experiments/", "")]
        parts += [f"{self.where[0]}=={self.where[1]}"] if self.where else []
        return "-".join([*parts, *([self.note] if self.note else []), verdict])


msg = s.message
CHATS_C1 = f"{s.CHAT1}/chats"
CHATS_C2 = f"{s.C2}/publicStageData/chat1/chats"
PAT_DATA = f"{s.PAT_P}/stageData"
UMA_DATA = f"{s.E1}/participants/uid-uma/stageData"
UMA_PRIVATE = f"{UMA_DATA}/pchat1/privateChats"
RAE_SURVEY = f"{s.E1}/participants/uid-rae/stageData/survey1"
TIA_DATA = f"{s.E1}/participants/uid-tia/stageData"
ANSWER = {"id": "chat1", "kind": "chat", "readyToEndChat": True}
READY_PRIVATE = {"id": "pchat1", "kind": "privateChat", "readyToEndChat": True}
FUTURE = datetime.datetime(2099, 1, 1, tzinfo=datetime.UTC)
RECENT = datetime.datetime.now(datetime.UTC)
"""A client clock's time: close to the server's, yet not the server's."""


def survey(**answers: dict[str, Any]) -> dict[str, Any]:
    """A survey answer document; each answer gets its question id and kind."""
    kinds = {q["id"]: q["kind"] for q in s.SURVEY1["questions"]}
    answer_map = {
        qid: {"id": qid, "kind": kinds.get(qid, "text"), **a} for qid, a in answers.items()
    }
    return {"id": "survey1", "kind": "survey", "answerMap": answer_map}


def ranking(*items: str) -> dict[str, Any]:
    return {"id": "ranking1", "kind": "ranking", "rankingList": list(items)}


S1_DAY1 = f"{s.S1}/days/00001"
HANA_ACTS = f"{S1_DAY1}/actions/2-1"
act = s.society_action


def hana_acts(note: str, path: str = HANA_ACTS, allowed: bool = DENY, **changes: Any) -> Case:
    """Hana (the player of member 2) writing an action, changed by ``changes``."""
    return Case("hana", "create", path, allowed, {**act(2), **changes}, note=note)


SOCIETY_CASES = [
    # --- societies: experimenters drive, players read what their member sees and act ------
    Case("gina", "get", s.S1, ALLOW),
    Case("alice", "query", "societies", ALLOW, where=("creator", "alice@lab.org")),
    Case("gina", "query", "societies", ALLOW, where=("creator", "uid-gina")),
    Case("carol", "query", "societies", ALLOW, where=("permissions.readers", ["carol@lab.org"])),
    Case("dana", "list", "societies", ALLOW),  # admin
    Case("gina", "update", s.S1, ALLOW, {"status": "paused"}),
    Case("gina", "create", f"{s.S1}/interventions/i1", ALLOW, {"agentId": 2, "amount": 5}),
    Case("gina", "get", f"{s.S1}/errors/e1", ALLOW),
    Case("gina", "get", f"{S1_DAY1}/state/votes", ALLOW),
    Case("gina", "create", f"{S1_DAY1}/actions/1-1", DENY, act(1, source="model")),
    Case("gina", "update", f"{s.S1}/members/2", DENY, {"status": "active"}),
    Case("hana", "get", s.S1, ALLOW),
    Case("hana", "update", s.S1, DENY, {"status": "paused"}),
    Case("hana", "list", "societies", DENY),
    Case("hana", "list", f"{s.S1}/posts", ALLOW),
    Case("hana", "get", f"{s.S1}/proposals/p1", ALLOW),
    Case("hana", "get", f"{s.S1}/summaries/00001", ALLOW),
    Case("hana", "get", f"{s.S1}/members/2", ALLOW),
    Case("hana", "get", f"{s.S1}/members/3", DENY),  # another player's member
    Case("hana", "get", f"{s.S1}/members/1", DENY),
    Case("hana", "get", S1_DAY1, ALLOW),
    Case("hana", "get", f"{S1_DAY1}/state/context", ALLOW),
    Case("hana", "get", f"{S1_DAY1}/state/votes", DENY),  # votes so far are in the context
    Case("hana", "get", f"{S1_DAY1}/members/2", ALLOW),
    Case("hana", "get", f"{S1_DAY1}/members/1", DENY),
    Case("hana", "get", f"{s.S1}/messages/m-a", ALLOW),  # to member 2
    Case("hana", "get", f"{s.S1}/messages/m-b", DENY),  # to member 4
    Case("hana", "query", f"{s.S1}/messages", ALLOW, where=("recipientId", 2)),
    Case("hana", "query", f"{s.S1}/messages", DENY, where=("recipientId", 4)),
    Case("hana", "list", f"{s.S1}/messages", DENY),
    Case("hana", "get", f"{s.S1}/errors/e1", DENY),
    Case("hana", "list", f"{s.S1}/turnLeases", DENY),
    Case("hana", "create", f"{s.S1}/interventions/i2", DENY, {"agentId": 2, "amount": 50}),
    Case("hana", "create", f"{s.S1}/posts/2", DENY, {"id": 2, "content": "forged"}),
    Case("hana", "get", f"{S1_DAY1}/actions/3-1", DENY),
    Case("ivo", "get", f"{S1_DAY1}/actions/3-1", ALLOW),
    Case("ivo", "update", f"{S1_DAY1}/actions/3-1", DENY, {"action": {"action": "idle"}}),
    Case("pat", "get", s.S1, DENY),
    Case("pat", "list", f"{s.S1}/posts", DENY),
    Case("anonymous", "get", f"{s.S1}/posts/1", DENY),
    Case("mallory", "get", s.S1, DENY),
    hana_acts("own", allowed=ALLOW),
    hana_acts("source-named", allowed=ALLOW, source="human"),
    hana_acts("as-member-3", f"{S1_DAY1}/actions/3-1", agentId=3),
    hana_acts("as-agent-1", f"{S1_DAY1}/actions/1-1", agentId=1),
    hana_acts("id-mismatch", f"{S1_DAY1}/actions/2-2"),
    hana_acts("slot-2-of-1", f"{S1_DAY1}/actions/2-2", slot=2),
    hana_acts("slot-0", f"{S1_DAY1}/actions/2-0", slot=0),
    hana_acts("as-model", source="model"),
    hana_acts("backend-field", invalidReason=""),
    hana_acts("model-calls", modelCalls=0),
    hana_acts("other-day", day=2),
    hana_acts("day-closing", f"{s.S1}/days/00002/actions/2-1", day=2),
    hana_acts("action-not-a-map", action="work"),
    hana_acts("huge-action", action={f"k{i}": i for i in range(9)}),
    Case("pat", "create", HANA_ACTS, DENY, act(2)),
    Case("ivo", "create", HANA_ACTS, DENY, act(2)),
]

S2 = s.S2
ALICE_SOCIETY = {"id": "s9", "status": "running", "creator": "alice@lab.org"}
OWNER_CASES = [
    # --- issue 28 row 15: a society is its owner's (and its readers', and admins') ----------
    Case("bob", "get", s.S1, DENY),  # gina's
    Case("bob", "update", s.S1, DENY, {"status": "paused"}),
    Case("bob", "create", f"{s.S1}/interventions/i9", DENY, {"agentId": 2, "amount": 5}),
    Case("bob", "set", f"{s.S1}/prompts/p9", DENY, {"text": "be evil"}),
    Case("bob", "get", f"{s.S1}/errors/e1", DENY),
    Case("bob", "list", f"{s.S1}/days", DENY),
    Case("bob", "get", f"{S1_DAY1}/state/votes", DENY),
    Case("alice", "list", "societies", DENY),  # would include others' societies
    Case("bob", "query", "societies", DENY, where=("creator", "alice@lab.org")),
    Case("alice", "get", S2, ALLOW),
    Case("alice", "update", S2, ALLOW, {"status": "paused"}),
    Case("alice", "create", f"{S2}/interventions/i1", ALLOW, {"agentId": 1, "amount": 5}),
    Case("alice", "update", S2, DENY, {"creator": "bob@lab.org"}, note="give-away"),
    Case("bob", "update", S2, DENY, {"creator": "bob@lab.org"}, note="take-over"),
    Case("carol", "get", S2, ALLOW),  # a reader
    Case("carol", "list", f"{S2}/days", ALLOW),
    Case("carol", "update", S2, DENY, {"status": "paused"}),
    Case("carol", "create", f"{S2}/interventions/i1", DENY, {"agentId": 1, "amount": 5}),
    Case("dana", "get", S2, ALLOW),  # admin
    Case("dana", "update", S2, ALLOW, {"status": "paused"}),
    Case("eve", "get", S2, DENY),
    Case("gina", "get", S2, DENY),
    Case("fake_alice", "get", S2, DENY),
    Case("alice", "create", "societies/s9", ALLOW, ALICE_SOCIETY),
    Case("gina", "create", "societies/s9", ALLOW, {**ALICE_SOCIETY, "creator": "uid-gina"}),
    Case("alice", "create", "societies/s9", DENY, {**ALICE_SOCIETY, "creator": "bob@lab.org"}),
    Case("alice", "create", "societies/s9", DENY, {"id": "s9"}, note="no-creator"),
    Case("alice", "create", "societies/s9", DENY, {**ALICE_SOCIETY, "creator": ""}, note="empty"),
    Case("mallory", "create", "societies/s9", DENY, {**ALICE_SOCIETY, "creator": "uid-mallory"}),
    # --- issue 28 row 15: roles are written by the experiment's creator (or an admin) -------
    Case("bob", "update", f"{s.E1}/roles/r1", DENY, {"name": "Chair"}),
    Case("bob", "create", f"{s.E1}/roles/r2", DENY, {"id": "r2", "name": "Spy"}),
    Case("bob", "delete", f"{s.E1}/roles/r1", DENY),
    Case("carol", "update", f"{s.E1}/roles/r1", DENY, {"name": "Chair"}),  # a reader
    Case("eve", "update", f"{s.E1}/roles/r1", DENY, {"name": "Chair"}),
    Case("alice", "create", "experiments/e2/roles/r2", DENY, {"id": "r2"}),  # bob's, public
    Case("dana", "update", f"{s.E1}/roles/r1", ALLOW, {"name": "Chair"}),
    Case("gina", "create", "experiments/e3/roles/r2", ALLOW, {"id": "r2", "name": "Lead"}),
    Case("alice", "create", f"{s.E1}/roles/r2", ALLOW, {"id": "r2", "name": "Scribe"}),
    # --- debates, conversations, workflows: their owner's readers read, nobody writes -------
    Case("alice", "get", "debates/d1", ALLOW),
    Case("carol", "get", "debates/d1", ALLOW),
    Case("dana", "get", "debates/d1", ALLOW),
    Case("alice", "list", "debates/d1/agents", ALLOW),
    Case("alice", "query", "debates", ALLOW, where=("creator", "alice@lab.org")),
    Case("bob", "get", "debates/d2", ALLOW),
    Case("bob", "get", "debates/d1", DENY),
    Case("bob", "get", "debates/d1/agents/a1", DENY),
    Case("alice", "get", "debates/d2", DENY),
    Case("alice", "list", "debates", DENY),
    Case("pat", "get", "debates/d1", DENY),
    Case("anonymous", "get", "debates/d1", DENY),
    Case("alice", "update", "debates/d1", DENY, {"paused": True}),
    Case("alice", "create", "debates/d9", DENY, {"name": "d9", "creator": "alice@lab.org"}),
    Case("alice", "get", "conversations/cv1", ALLOW),
    Case("carol", "list", "conversations/cv1/steps", ALLOW),
    Case("alice", "query", "conversations", ALLOW, where=("creator", "alice@lab.org")),
    Case("bob", "get", "conversations/cv1", DENY),
    Case("bob", "list", "conversations/cv1/steps", DENY),
    Case("bob", "query", "conversations", DENY, where=("creator", "alice@lab.org")),
    Case("alice", "update", "conversations/cv1", DENY, {"memory": {}}),
    Case(
        "alice",
        "create",
        "conversations/cv9",
        DENY,
        {"query": "q", "workflowId": "w1", "creator": "alice@lab.org"},
    ),
    Case("alice", "get", "workflows/w1/agents/critic", ALLOW),
    Case("alice", "get", "workflows/w2", ALLOW),  # bob's, public
    Case("alice", "query", "workflows", ALLOW, where=("permissions.visibility", "public")),
    Case("bob", "get", "workflows/w1", DENY),
    Case("bob", "get", "workflows/w1/agents/critic", DENY),
    Case("mallory", "get", "workflows/w2", DENY),  # public to experimenters only
    Case("alice", "update", "workflows/w1/agents/critic", DENY, {"code": "import os"}),
    Case("bob", "set", "workflows/w2", DENY, {"name": "w2", "creator": "uid-bob"}),
    # --- issue 28 row 16: Deliberate Lab's anonymous reads, closed by the strict ruleset ----
    Case("anonymous", "get", f"{s.PAT_P}/alerts/al1", ALLOW, strict=DENY),
    Case("anonymous", "list", f"{s.PAT_P}/alerts", ALLOW, strict=DENY),
    Case("quinn", "get", f"{s.PAT_P}/alerts/al1", ALLOW, strict=DENY),  # another participant
    Case("pat", "list", f"{s.PAT_P}/alerts", ALLOW),  # its own
    Case("alice", "list", f"{s.PAT_P}/alerts", ALLOW),  # the experiment's creator
    Case("bob", "get", f"{s.PAT_P}/alerts/al1", ALLOW, strict=DENY),
    Case("pat", "create", f"{s.PAT_P}/alerts/al2", DENY, {"id": "al2"}),
    Case("anonymous", "list", "experimenters", ALLOW, strict=DENY),
    Case("anonymous", "get", "experimenters/alice@lab.org", ALLOW, strict=DENY),
    Case("pat", "list", "experimenters", ALLOW, strict=DENY),
    Case("mallory", "list", "experimenters", ALLOW, strict=DENY),
    Case("bob", "list", "experimenters", ALLOW),
    Case("anonymous", "get", f"{s.E1}/roles/r1", ALLOW, strict=DENY),
    Case("stranger", "list", f"{s.E1}/roles", ALLOW, strict=DENY),
    Case("quinn", "list", f"{s.E1}/roles", ALLOW),  # a participant of e1
    Case("carol", "get", f"{s.E1}/roles/r1", ALLOW),
    Case("stranger", "get", f"{s.E1}/participantPublicData/pub-pat", ALLOW, strict=DENY),
    Case("pat", "get", f"{s.E1}/participantPublicData/pub-pat", ALLOW),
]


J_E1, J_S1, J_S2 = f"{s.E1}/journal", f"{s.S1}/journal", f"{S2}/journal"
J_D1, J_CV1 = "debates/d1/journal", "conversations/cv1/journal"
FORGED_REPLY = s.recorded_call("forged")
JOURNAL_CASES = [
    # --- the journal of model replies: the run's experimenters read it; participants and
    # --- players never see it; nobody writes it from a client (it would be replayed) --------
    Case("alice", "get", f"{J_E1}/k1", ALLOW),  # the experiment's creator
    Case("alice", "list", J_E1, ALLOW),
    Case("carol", "get", f"{J_E1}/k1", ALLOW),  # a reader
    Case("dana", "list", J_E1, ALLOW),  # admin
    Case("alice", "list", "experiments/e2/journal", ALLOW),  # bob's, public
    Case("bob", "get", f"{J_E1}/k1", DENY),
    Case("bob", "list", J_E1, DENY),
    Case("eve", "list", J_E1, DENY),
    Case("fake_alice", "get", f"{J_E1}/k1", DENY),
    Case("mallory", "list", J_E1, DENY),
    Case("pat", "get", f"{J_E1}/k1", DENY),  # its own experiment's participant
    Case("pat", "list", J_E1, DENY),
    Case("quinn", "query", J_E1, DENY, where=("agent", "agent-1")),
    Case("stranger", "get", f"{J_E1}/k1", DENY),
    Case("anonymous", "list", J_E1, DENY),
    Case("gina", "get", f"{J_S1}/k1", ALLOW),  # the society's creator
    Case("gina", "list", J_S1, ALLOW),
    Case("alice", "get", f"{J_S2}/k1", ALLOW),
    Case("carol", "list", J_S2, ALLOW),
    Case("dana", "get", f"{J_S1}/k1", ALLOW),
    Case("bob", "get", f"{J_S1}/k1", DENY),
    Case("gina", "list", J_S2, DENY),
    Case("hana", "get", f"{J_S1}/k1", DENY),  # a player: other members' replies
    Case("hana", "list", J_S1, DENY),
    Case("ivo", "query", J_S1, DENY, where=("agent", "3")),
    Case("pat", "list", J_S1, DENY),
    Case("alice", "get", f"{J_D1}/k1", ALLOW),
    Case("carol", "list", J_D1, ALLOW),
    Case("bob", "list", "debates/d2/journal", ALLOW),
    Case("bob", "get", f"{J_D1}/k1", DENY),
    Case("alice", "list", "debates/d2/journal", DENY),
    Case("pat", "get", f"{J_D1}/k1", DENY),
    Case("alice", "get", f"{J_CV1}/k1", ALLOW),
    Case("carol", "list", J_CV1, ALLOW),
    Case("bob", "list", J_CV1, DENY),
    Case("anonymous", "get", f"{J_CV1}/k1", DENY),
    # writes: not the owner, not an admin, not a participant or player
    Case("alice", "create", f"{J_E1}/k2", DENY, FORGED_REPLY),
    Case("alice", "update", f"{J_E1}/k1", DENY, {"text": "forged"}),
    Case("alice", "delete", f"{J_E1}/k1", DENY),
    Case("dana", "set", f"{J_E1}/k2", DENY, FORGED_REPLY),
    Case("pat", "create", f"{J_E1}/k2", DENY, FORGED_REPLY),
    Case("pat", "update", f"{J_E1}/k1", DENY, {"text": "forged"}),
    Case("gina", "create", f"{J_S1}/k2", DENY, FORGED_REPLY),
    Case("gina", "delete", f"{J_S1}/k1", DENY),
    Case("hana", "create", f"{J_S1}/k2", DENY, FORGED_REPLY),
    Case("alice", "set", f"{J_D1}/k2", DENY, FORGED_REPLY),
    Case("alice", "update", f"{J_CV1}/k1", DENY, {"text": "forged"}),
    Case("anonymous", "create", f"{J_CV1}/k2", DENY, FORGED_REPLY),
]


def pat_says(note: str, allowed: bool = DENY, **changes: Any) -> Case:
    """Pat posting to its cohort's chat, its message changed by ``changes``."""
    return Case(
        "pat", "create", f"{CHATS_C1}/m9", allowed, msg("m9", "pub-pat", **changes), note=note
    )


def rae_answers(note: str, allowed: bool, op: Op = "update", **answers: dict[str, Any]) -> Case:
    return Case("rae", op, RAE_SURVEY, allowed, survey(**answers), note=note)


CASES = [
    # --- experimenterData (model API keys): only the owner -----------------------------------
    Case("alice", "get", "experimenterData/alice@lab.org", ALLOW),
    Case("alice", "update", "experimenterData/alice@lab.org", ALLOW, {"apiKeys": {}}),
    Case("bob", "get", "experimenterData/uid-bob", ALLOW),
    Case("bob", "get", "experimenterData/alice@lab.org", DENY),
    Case("dana", "get", "experimenterData/alice@lab.org", DENY),  # not even an admin
    Case("fake_alice", "get", "experimenterData/alice@lab.org", DENY),  # unverified email
    Case("pat", "get", "experimenterData/alice@lab.org", DENY),
    Case("anonymous", "get", "experimenterData/alice@lab.org", DENY),
    Case("alice", "list", "experimenterData", DENY),
    Case("bob", "set", "experimenterData/alice@lab.org", DENY, {"apiKeys": {}}),
    # --- allowlist ------------------------------------------------------------------------
    Case("alice", "get", "allowlist/alice@lab.org", ALLOW),
    Case("bob", "get", "allowlist/alice@lab.org", DENY),
    Case("dana", "list", "allowlist", ALLOW),
    Case("alice", "list", "allowlist", DENY),
    Case("alice", "create", "allowlist/mallory@evil.org", DENY, {}),
    Case("mallory", "create", "allowlist/mallory@evil.org", DENY, {}),
    # --- experiments ----------------------------------------------------------------------
    Case("alice", "get", s.E1, ALLOW),  # creator
    Case("carol", "get", s.E1, ALLOW),  # reader
    Case("dana", "get", s.E1, ALLOW),  # admin
    Case("bob", "get", s.E1, DENY),  # other experimenter
    Case("eve", "get", s.E1, DENY),  # isAdmin: false is not an admin
    Case("mallory", "get", s.E1, DENY),
    Case("fake_alice", "get", s.E1, DENY),
    Case("pat", "get", s.E1, DENY),  # its participant: the creator's email is private
    Case("gina", "get", "experiments/e3", ALLOW),  # experimenter by custom claim, creator by uid
    Case("gina", "get", s.E1, DENY),
    Case("gina", "query", "experiments", ALLOW, where=("metadata.creator", "uid-gina")),
    Case("stranger", "query", "experiments", DENY, where=("metadata.creator", "uid-gina")),
    Case("stranger", "get", s.E1, DENY),
    Case("anonymous", "get", s.E1, DENY),
    Case("alice", "get", "experiments/e2", ALLOW),  # public
    Case("pat", "get", "experiments/e2", DENY),  # not its participant
    Case("alice", "update", s.E1, DENY, {"stageIds": []}),
    Case("alice", "create", "experiments/e4", DENY, {"metadata": {"creator": "alice@lab.org"}}),
    Case("alice", "query", "experiments", ALLOW, where=("metadata.creator", "alice@lab.org")),
    Case("alice", "query", "experiments", ALLOW, where=("permissions.visibility", "public")),
    Case("alice", "list", "experiments", DENY),  # would include bob's private ones
    Case("dana", "list", "experiments", ALLOW),
    Case("bob", "query", "experiments", DENY, where=("metadata.creator", "alice@lab.org")),
    Case("pat", "list", "experiments", DENY),
    # --- stages ---------------------------------------------------------------------------
    Case("pat", "get", f"{s.E1}/stages/chat1", ALLOW),
    Case("pat", "list", f"{s.E1}/stages", ALLOW),
    Case("alice", "list", f"{s.E1}/stages", ALLOW),
    Case("bob", "get", f"{s.E1}/stages/chat1", DENY),
    Case("anonymous", "list", f"{s.E1}/stages", DENY),
    Case("alice", "update", f"{s.E1}/stages/chat1", DENY, {"kind": "survey"}),
    Case("pat", "update", f"{s.E1}/stages/chat1", DENY, {"kind": "survey"}),
    # --- cohorts and public stage data: backend writes, members read -----------------------
    Case("pat", "get", s.C1, DENY),  # its own cohort: the creator's email is private
    Case("pat", "get", s.C2, DENY),
    Case("quinn", "get", f"{s.C2}/publicStageData/chat1", ALLOW),
    Case("alice", "list", f"{s.E1}/cohorts", ALLOW),
    Case("bob", "list", f"{s.E1}/cohorts", DENY),
    Case("pat", "update", s.C1, DENY, {"stageUnlockMap": {"chat1": True}}),
    Case("alice", "update", s.C1, DENY, {"stageUnlockMap": {"chat1": True}}),
    Case("pat", "get", s.CHAT1, ALLOW),
    Case("quinn", "get", s.CHAT1, DENY),
    Case("pat", "update", s.CHAT1, DENY, {"currentDiscussionId": "d2"}),
    Case("alice", "update", s.CHAT1, DENY, {"currentDiscussionId": "d2"}),
    # --- group chat: a participant posts only as itself, in its cohort, at its stage --------
    Case("pat", "list", CHATS_C1, ALLOW),
    Case("quinn", "list", CHATS_C1, DENY),
    Case("alice", "list", CHATS_C1, ALLOW),
    Case("anonymous", "list", CHATS_C1, DENY),
    Case("pat", "create", f"{CHATS_C1}/m9", ALLOW, msg("m9", "pub-pat")),
    Case("quinn", "create", f"{CHATS_C2}/m9", ALLOW, msg("m9", "pub-quinn", discussion_id=None)),
    pat_says("longest", ALLOW, message="x" * 4000),
    # the attacks of issue 12: forged identity, time and markers, floods, other threads
    pat_says("forged-name", profile={"name": "Moderator", "avatar": "🐱", "pronouns": None}),
    pat_says("forged-avatar", profile={**s.profile_of("pub-pat"), "avatar": "⚖️"}),
    pat_says("profile-extra", profile={**s.profile_of("pub-pat"), "isModerator": True}),
    pat_says("no-profile", profile=None),
    pat_says("future-timestamp", timestamp=FUTURE),
    pat_says("client-clock", timestamp=RECENT),
    pat_says("no-timestamp", timestamp=None),
    pat_says("900KB", message="x" * 900_000),
    pat_says("4001-chars", message="x" * 4001),
    pat_says("empty", message=""),
    pat_says("not-text", message=42),
    pat_says("left-marker", leftChatBy="pub-agent"),
    pat_says("declined-marker", declinedBy="pub-agent"),
    pat_says("timer-marker", timerEnded=True),
    pat_says("skipped-marker", skippedTurnOf="pub-agent"),
    pat_says("as-error", isError=True),
    pat_says("agent-id", agentId="persona-1"),
    pat_says("explanation", explanation="I am the moderator"),
    pat_says("other-thread", discussionId="d2"),
    pat_says("no-thread", discussionId=None),
    pat_says("system", type="system", profile={"name": "System", "avatar": None, "pronouns": None}),
    Case("pat", "create", f"{CHATS_C1}/m9", DENY, msg("m9", "pub-quinn"), note="as-another"),
    Case("pat", "create", f"{CHATS_C1}/m9", DENY, msg("m9", "pub-agent"), note="as-agent"),
    Case(
        "pat",
        "create",
        f"{CHATS_C1}/m9",
        DENY,
        msg("m9", "pub-pat", "mediator"),
        note="as-mediator",
    ),
    Case("pat", "create", f"{CHATS_C1}/m9", DENY, msg("m8", "pub-pat"), note="id-mismatch"),
    Case("pat", "create", f"{CHATS_C2}/m9", DENY, msg("m9", "pub-pat")),  # other cohort
    Case(  # not its current stage
        "pat", "create", f"{s.C1}/publicStageData/survey1/chats/m9", DENY, msg("m9", "pub-pat")
    ),
    Case("rae", "create", f"{CHATS_C1}/m9", DENY, msg("m9", "pub-rae")),  # at another stage
    Case("uma", "create", f"{CHATS_C1}/m9", DENY, msg("m9", "pub-uma")),  # moved on
    Case("sam", "create", f"{CHATS_C1}/m9", DENY, msg("m9", "pub-sam")),  # finished
    Case("oli", "create", f"{CHATS_C1}/m9", DENY, msg("m9", "pub-oli")),  # an observer
    Case("pat", "update", f"{CHATS_C1}/m1", DENY, {"message": "edited"}),
    Case("pat", "delete", f"{CHATS_C1}/m1", DENY),
    Case("alice", "create", f"{CHATS_C1}/m9", DENY, msg("m9", "pub-pat")),
    Case("stranger", "create", f"{CHATS_C1}/m9", DENY, msg("m9", "pub-pat")),
    Case("anonymous", "create", f"{CHATS_C1}/m9", DENY, msg("m9", "pub-pat")),
    # --- trigger logs: backend only -------------------------------------------------------
    Case("alice", "get", f"{s.CHAT1}/triggerLogs/m1-participant", ALLOW),
    Case("pat", "get", f"{s.CHAT1}/triggerLogs/m1-participant", DENY),
    Case("pat", "create", f"{s.CHAT1}/triggerLogs/m9-participant", DENY, {"id": "x"}),
    Case("alice", "create", f"{s.CHAT1}/triggerLogs/m9-participant", DENY, {"id": "x"}),
    # --- participant profiles: own only, and nobody edits them ----------------------------
    Case("pat", "get", s.PAT_P, ALLOW),
    Case("pat", "get", s.QUINN_P, DENY),
    Case("pat", "get", f"{s.E1}/participants/uid-rae", DENY),  # same cohort
    Case("pat", "get", f"{s.E1}/participants/agent-1", DENY),  # agent config stays hidden
    Case("pat", "list", f"{s.E1}/participants", DENY),
    Case("pat", "query", f"{s.E1}/participants", DENY, where=("currentCohortId", "c1")),
    Case("pat", "update", s.QUINN_P, DENY, {"name": "pwned"}),
    Case("quinn", "update", s.PAT_P, DENY, {"currentStageId": "survey1"}),
    Case("pat", "update", s.PAT_P, DENY, {"currentStageId": "survey1"}, note="progress"),
    Case("pat", "update", s.PAT_P, DENY, {"name": "Pat"}, note="name"),
    Case("pat", "create", f"{s.E1}/participants/uid-new", DENY, {"currentCohortId": "c1"}),
    Case("stranger", "create", f"{s.E1}/participants/uid-stranger", DENY, {}),
    Case("alice", "get", s.PAT_P, ALLOW),
    Case("alice", "update", s.PAT_P, DENY, {"currentStatus": "ATTENTION_CHECK"}),
    Case("carol", "list", f"{s.E1}/participants", ALLOW),
    Case("bob", "list", f"{s.E1}/participants", DENY),
    # --- stage answers: its own, for a stage it is at, valid for that stage ----------------
    Case("pat", "update", f"{PAT_DATA}/chat1", ALLOW, ANSWER),  # ready to end the chat
    Case(
        "pat",
        "update",
        f"{PAT_DATA}/chat1",
        ALLOW,
        {"discussionTimestampMap": {"d1": s.SERVER_TIME}},
        note="ready-for-next-thread",
    ),
    Case(
        "pat",
        "update",
        f"{PAT_DATA}/chat1",
        DENY,
        {"discussionTimestampMap": {"d2": s.SERVER_TIME}},
        note="other-thread",
    ),
    Case(
        "pat",
        "update",
        f"{PAT_DATA}/chat1",
        DENY,
        {"discussionTimestampMap": {"d1": FUTURE}},
        note="thread-future",
    ),
    Case("pat", "update", f"{PAT_DATA}/chat1", DENY, {"readyToEndChat": "yes"}, note="not-bool"),
    Case("pat", "update", f"{PAT_DATA}/chat1", DENY, {"leftChatBy": "pub-pat"}, note="marker"),
    Case("pat", "get", f"{PAT_DATA}/survey1", ALLOW),
    Case("pat", "list", PAT_DATA, ALLOW),
    rae_answers("text-longest", ALLOW, "set", t1={"answer": "x" * 20}),  # creates the answer
    rae_answers("scale-highest", ALLOW, s1={"value": 7}),
    rae_answers("choice", ALLOW, mc1={"choiceId": "b"}),
    rae_answers("last-choice-of-last-question", ALLOW, mc10={"choiceId": "o9"}),
    rae_answers("invented-choice-of-last-question", DENY, mc10={"choiceId": "o10"}),
    rae_answers("check", ALLOW, c1={"isChecked": True}),
    rae_answers("two-at-once", DENY, t1={"answer": "fine"}, c1={"isChecked": True}),
    rae_answers("scale-lowest", ALLOW, s1={"value": 1}),
    rae_answers("text-shortest", ALLOW, t1={"answer": "ok"}),
    rae_answers("scale-999", DENY, s1={"value": 999}),
    rae_answers("scale-0", DENY, s1={"value": 0}),
    rae_answers("scale-float", DENY, s1={"value": 3.5}),
    rae_answers("invented-question", DENY, q9={"answer": "hi"}),
    rae_answers("invented-option", DENY, mc1={"choiceId": "z"}),
    rae_answers("text-21", DENY, t1={"answer": "x" * 21}),
    rae_answers("text-1", DENY, t1={"answer": "x"}),
    rae_answers("check-not-bool", DENY, c1={"isChecked": "yes"}),
    rae_answers("wrong-kind", DENY, s1={"kind": "text", "answer": "7"}),
    rae_answers("wrong-id", DENY, s1={"id": "c1", "value": 3}),
    rae_answers("extra-key", DENY, s1={"value": 3, "note": "x"}),
    Case("rae", "update", RAE_SURVEY, DENY, {**survey(), "kind": "ranking"}, note="doc-kind"),
    Case("rae", "update", RAE_SURVEY, DENY, {**survey(), "extra": 1}, note="doc-extra-key"),
    Case("rae", "create", f"{TIA_DATA}/ranking1", DENY, ranking("i1")),  # another's
    Case("rae", "create", f"{s.E1}/participants/uid-rae/stageData/ranking1", DENY, ranking("i1")),
    Case("tia", "set", f"{TIA_DATA}/ranking1", ALLOW, ranking("i3", "i1", "i2")),
    Case("tia", "set", f"{TIA_DATA}/ranking1", DENY, ranking("i1", "i9"), note="invented-item"),
    Case("tia", "set", f"{TIA_DATA}/ranking1", DENY, ranking("i1", "i1"), note="twice"),
    Case("tia", "set", f"{TIA_DATA}/survey1", ALLOW, survey(c1={"isChecked": False})),  # earlier
    Case("pat", "update", f"{PAT_DATA}/survey1", DENY, survey(s1={"value": 5})),  # completed
    Case("pat", "set", f"{PAT_DATA}/ranking1", DENY, ranking("i1")),  # completed
    Case(
        "pat",
        "set",
        f"{PAT_DATA}/survey2",
        DENY,
        {"id": "survey2", "kind": "survey", "answerMap": {}},
    ),
    Case(
        "vic",
        "set",
        f"{s.E1}/participants/uid-vic/stageData/survey2",
        DENY,
        {"id": "survey2", "kind": "survey", "answerMap": {}},
        note="locked-stage",
    ),
    Case("pat", "get", f"{s.QUINN_P}/stageData/survey1", DENY),
    Case("pat", "update", f"{s.QUINN_P}/stageData/survey1", DENY, {"answerMap": {}}),
    Case("pat", "create", f"{s.QUINN_P}/stageData/chat1", DENY, ANSWER),
    Case(
        "pat", "update", f"{PAT_DATA}/chat1", DENY, {**ANSWER, "id": "survey1"}, note="id-mismatch"
    ),
    Case("pat", "delete", f"{PAT_DATA}/survey1", DENY),
    Case("sam", "create", f"{s.E1}/participants/uid-sam/stageData/chat1", DENY, ANSWER),
    Case("stranger", "create", f"{s.E1}/participants/uid-stranger/stageData/chat1", DENY, ANSWER),
    Case("alice", "get", f"{PAT_DATA}/survey1", ALLOW),
    Case("alice", "update", f"{PAT_DATA}/survey1", DENY, {"answerMap": {}}),
    Case("anonymous", "get", f"{PAT_DATA}/survey1", DENY),
    # --- private chats --------------------------------------------------------------------
    Case("uma", "create", f"{UMA_PRIVATE}/pm9", ALLOW, msg("pm9", "pub-uma", discussion_id=None)),
    Case("uma", "set", f"{UMA_DATA}/pchat1", ALLOW, READY_PRIVATE),
    Case("uma", "list", UMA_PRIVATE, ALLOW),
    Case(
        "uma",
        "create",
        f"{UMA_PRIVATE}/pm9",
        DENY,
        msg("pm9", "pub-uma", discussion_id=None, timestamp=FUTURE),
        note="future-timestamp",
    ),
    Case(
        "uma",
        "create",
        f"{UMA_PRIVATE}/pm9",
        DENY,
        msg("pm9", "pub-uma", discussion_id=None, profile=s.profile_of("pub-agent")),
        note="forged-profile",
    ),
    Case(
        "uma",
        "create",
        f"{UMA_PRIVATE}/pm9",
        DENY,
        msg("pm9", "pub-quinn", discussion_id=None),
        note="as-another",
    ),
    Case(
        "quinn", "create", f"{UMA_PRIVATE}/pm9", DENY, msg("pm9", "pub-quinn", discussion_id=None)
    ),
    Case("quinn", "list", UMA_PRIVATE, DENY),
    Case(  # a private chat under a group chat stage
        "pat",
        "create",
        f"{PAT_DATA}/chat1/privateChats/pm9",
        DENY,
        msg("pm9", "pub-pat", discussion_id=None),
    ),
    # --- mediators, personas, prompts, model logs, error records: experimenters read -------
    Case("alice", "get", f"{s.E1}/mediators/med-1", ALLOW),
    Case("pat", "get", f"{s.E1}/mediators/med-1", DENY),
    Case("alice", "update", f"{s.E1}/mediators/med-1", DENY, {"currentStatus": "paused"}),
    Case("pat", "update", f"{s.E1}/mediators/med-1", DENY, {"currentStatus": "paused"}),
    Case("alice", "get", f"{s.E1}/agentParticipants/persona-1", ALLOW),
    Case("alice", "get", f"{s.E1}/agentParticipants/persona-1/prompts/survey1", ALLOW),
    Case("carol", "get", f"{s.E1}/agentMediators/persona-m/prompts/chat1", ALLOW),
    Case("pat", "get", f"{s.E1}/agentParticipants/persona-1", DENY),
    Case("pat", "get", f"{s.E1}/agentMediators/persona-m/prompts/chat1", DENY),
    Case("bob", "get", f"{s.E1}/agentParticipants/persona-1/prompts/survey1", DENY),
    Case("alice", "create", f"{s.E1}/agentParticipants/persona-2", DENY, {"name": "x"}),
    Case("alice", "list", f"{s.E1}/logs", ALLOW),
    Case("carol", "get", f"{s.E1}/logs/log-1", ALLOW),
    Case("bob", "list", f"{s.E1}/logs", DENY),
    Case("pat", "get", f"{s.E1}/logs/log-1", DENY),
    Case("alice", "create", f"{s.E1}/logs/log-2", DENY, {"status": "SUCCESS"}),
    Case("alice", "list", f"{s.E1}/errors", ALLOW),
    Case("dana", "get", f"{s.E1}/errors/err-1", ALLOW),
    Case("pat", "list", f"{s.E1}/errors", DENY),
    Case("eve", "list", f"{s.E1}/errors", DENY),
    Case("alice", "delete", f"{s.E1}/errors/err-1", DENY),
    # --- everything else ------------------------------------------------------------------
    # --- Deliberate Lab's own collections, with its access rules -------------------------
    Case("alice", "get", "experimentTemplates/t1", ALLOW),  # public
    Case("alice", "get", "experimentTemplates/t2", DENY),  # bob's, private
    Case("bob", "get", "experimentTemplates/t2", ALLOW),
    Case("dana", "get", "experimentTemplates/t2", ALLOW),
    Case("pat", "get", "experimentTemplates/t1", DENY),
    Case("alice", "list", "experimentTemplates", ALLOW),
    Case("alice", "update", "experimentTemplates/t1", DENY, {"id": "t1"}),
    Case("alice", "update", "agentTemplates/a1", ALLOW, {"id": "a1"}),
    Case("bob", "update", "agentTemplates/a1", DENY, {"id": "a1"}),
    Case("alice", "create", "agentTemplates/a2", DENY, {"id": "a2"}),
    Case("mallory", "list", "agentTemplates", DENY),
    Case("carol", "get", "experimenters/alice@lab.org", ALLOW),
    Case("alice", "update", "experimenters/alice@lab.org", ALLOW, {"name": "Al"}),
    Case("bob", "update", "experimenters/alice@lab.org", DENY, {"name": "Al"}),
    # REST API key hashes: the api function's alone, not even their owner's
    Case("alice", "get", "experimenters/alice@lab.org/apiKeys/k1", DENY),
    Case("alice", "list", "experimenters/alice@lab.org/apiKeys", DENY),
    Case("anonymous", "get", "experimenters/alice@lab.org/apiKeys/k1", DENY),
    Case("alice", "create", "experimenters/alice@lab.org/apiKeys/k2", DENY, {"keyId": "k2"}),
    Case("alice", "update", f"{s.E1}/roles/r1", ALLOW, {"name": "Chair"}),
    Case("pat", "update", f"{s.E1}/roles/r1", DENY, {"name": "Chair"}),
    Case("anonymous", "get", f"{s.E1}/participantPublicData/pub-pat", ALLOW, strict=DENY),
    Case("pat", "update", f"{s.E1}/participantPublicData/pub-pat", DENY, {"publicId": "x"}),
    Case("dana", "create", "somewhere/else", DENY, {"x": 1}),
    *SOCIETY_CASES,
    *OWNER_CASES,
    *JOURNAL_CASES,
]


@pytest.fixture(scope="module", params=rulesets.NAMES)
def rest(request: pytest.FixtureRequest, runtime: Any) -> Iterator[FirestoreRest]:
    """A project on the session's emulator with one ruleset and the seed data."""
    ruleset: Ruleset = request.param
    client = FirestoreRest(runtime.firestore_host, PROJECTS[ruleset])
    client.put_rules(rulesets.path(ruleset).read_text())
    client.reset()
    client.seed(s.documents())
    yield client
    client.reset()
    client.close()


def ruleset_of(rest: FirestoreRest) -> Ruleset:
    return next(name for name, project in PROJECTS.items() if project == rest.project)


class Caller:
    """Runs cases and remembers whether one changed the data."""

    def __init__(self, rest: FirestoreRest) -> None:
        self.rest, self.wrote = rest, False

    def call(self, case: Case) -> int:
        status = self.rest.call(s.USERS[case.who], case.op, case.path, case.data, case.where)
        self.wrote |= case.op not in ("get", "list", "query") and status == 200
        return status


@pytest.fixture
def caller(rest: FirestoreRest) -> Iterator[Caller]:
    """The seed data, restored after a test whose write went through."""
    caller = Caller(rest)
    yield caller
    if caller.wrote:
        rest.reset()
        rest.seed(s.documents())


def test_the_matrix_is_large_and_two_sided() -> None:
    allowed = sum(c.allowed for c in CASES)
    assert len(CASES) >= 200 and allowed >= 60 and len(CASES) - allowed >= 150
    assert {c.who for c in CASES} >= {"alice", "bob", "pat", "quinn", "anonymous"}
    assert len({c.id() + str(c.data) + str(c.where) for c in CASES}) == len(CASES)
    differ = [c for c in CASES if c.strict is not None]
    assert len(differ) >= 10 and all(c.allowed and not c.strict for c in differ)


@pytest.mark.parametrize("case", CASES, ids=[c.id() for c in CASES])
def test_rules(caller: Caller, case: Case) -> None:
    status = caller.call(case)
    expected = 200 if case.expected(ruleset_of(caller.rest)) else 403
    assert status == expected, (
        f"{case.who} {case.op} {case.path}: HTTP {status}\n{caller.rest.last_reply}"
    )


def test_what_the_tools_create_belongs_to_dlab_creator(
    rest: FirestoreRest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A society and a workflow written by the tools (admin credentials) carry DLAB_CREATOR
    as their creator, so the rules give them to that experimenter and to nobody else."""
    monkeypatch.setenv("DLAB_CREATOR", "Alice@Lab.org")
    db = firestore.Client(project=rest.project)
    try:
        society_client.create(db, {"agents": 3}, society_id="s-tool")
        examples = Path(load_workflow.__file__).resolve().parents[1] / "workflows" / "example"
        load_workflow.load(db, examples, "w-tool")
        for path in ("societies/s-tool", "workflows/w-tool"):
            assert rest.call(s.ALICE, "get", path) == 200, rest.last_reply
            assert rest.call(s.BOB, "get", path) == 403
        query = ("creator", "alice@lab.org")
        assert rest.call(s.ALICE, "query", "societies", where=query) == 200
        assert rest.call(s.ALICE, "update", "societies/s-tool", {"status": "paused"}) == 200
        assert rest.call(s.BOB, "update", "societies/s-tool", {"status": "paused"}) == 403
    finally:
        rest.reset()
        rest.seed(s.documents())
