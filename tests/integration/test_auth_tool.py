"""python -m tools.auth: the identities the security rules expect, end to end on the emulator.

The Firebase Auth emulator ships with firebase-tools, which needs Node and Java 21; neither is
on these machines (Java 17). So Auth is a small in-process stand-in for the Identity Toolkit
endpoints firebase-admin calls (``/accounts``, ``:lookup``, ``:update``) through its emulator
support (FIREBASE_AUTH_EMULATOR_HOST), and the participant's sign-in is a mock ID token for the
uid the custom token names, as the Auth emulator would issue it. Firestore and its rules are
the real emulator.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import firebase_admin
import pytest
from google.cloud import firestore

from shared.models import DocumentError
from tests.integration import rules_seed as s
from tests.integration.rules_client import FirestoreRest, User
from tools import auth as tool

pytestmark = pytest.mark.emulator

PROJECT = "demo-auth"
RULES = Path(__file__).resolve().parents[2] / "firestore.rules"
STRICT = RULES.with_name("firestore.strict.rules")


class FakeIdentityToolkit(ThreadingHTTPServer):
    """Users in memory, behind the three account endpoints firebase-admin uses here."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.users: dict[str, dict[str, Any]] = {}

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path.endswith("/accounts"):
            uid = body.get("localId") or uuid.uuid4().hex
            self.users[uid] = {**body, "localId": uid}
            return {"localId": uid}
        if path.endswith("/accounts:lookup"):
            wanted = [("localId", v) for v in body.get("localId", [])]
            wanted += [("email", v) for v in body.get("email", [])]
            found = [u for u in self.users.values() if any(u.get(k) == v for k, v in wanted)]
            return {"users": found} if found else {}
        if path.endswith("/accounts:update"):
            self.users[body["localId"]].update(body)
            return {"localId": body["localId"]}
        raise AssertionError(f"unexpected call {path}")


class _Handler(BaseHTTPRequestHandler):
    server: FakeIdentityToolkit

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        data = json.dumps(self.server.answer(self.path.split("?")[0], body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def stack(runtime: Any) -> Iterator[tuple[FirestoreRest, Any, Any, FakeIdentityToolkit]]:
    """Once per module: the rules matrix's documents in their own project, an admin client,
    the Auth stand-in and a firebase-admin app pointed at both (its Auth client keeps the host)."""
    server = FakeIdentityToolkit()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rest = FirestoreRest(runtime.firestore_host, PROJECT)
    rest.put_rules(RULES.read_text())
    rest.reset()
    rest.seed(s.documents())
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FIREBASE_AUTH_EMULATOR_HOST", server.host)
        env.setenv("FIRESTORE_EMULATOR_HOST", runtime.firestore_host)
        client = firestore.Client(project=PROJECT)
        app = firebase_admin.initialize_app(options={"projectId": PROJECT}, name=uuid.uuid4().hex)
        yield rest, client, app, server
        firebase_admin.delete_app(app)
    server.shutdown()
    server.server_close()
    rest.reset()
    rest.close()


@pytest.fixture
def setup(stack: tuple) -> tuple[FirestoreRest, Any, Any]:
    rest, client, app, _ = stack
    return rest, client, app


@pytest.fixture
def identity(stack: tuple) -> FakeIdentityToolkit:
    """The Auth stand-in, without users."""
    server = stack[3]
    server.users.clear()
    return server


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_a_participant_signs_in_as_its_own_document(setup, identity) -> None:
    rest, client, app = setup
    token = tool.participant_token(client, app, "e1", "uid-pat")
    claims = _claims(token)
    assert claims["uid"] == "uid-pat" and claims["claims"] == {"experimentId": "e1"}
    assert "uid-pat" in identity.users
    assert tool.participant_token(client, app, "e1", "uid-pat")  # the user is reused
    assert len(identity.users) == 1

    signed_in = User(claims["uid"])  # the ID token signInWithCustomToken(token) gives
    assert rest.call(signed_in, "get", s.PAT_P) == 200
    assert rest.call(signed_in, "get", s.QUINN_P) == 403


@pytest.mark.parametrize("participant", ["agent-1", "uid-nobody"])
def test_agents_and_unknown_participants_get_no_token(setup, identity, participant) -> None:
    _, client, app = setup
    with pytest.raises(DocumentError):
        tool.participant_token(client, app, "e1", participant)
    assert not identity.users


def test_an_experimenter_gets_the_claim_and_the_allowlist_entry(setup, identity) -> None:
    rest, client, app = setup
    uid = tool.grant_experimenter(client, app, "Zoe@Lab.org")
    assert json.loads(identity.users[uid]["customAttributes"]) == {"role": "experimenter"}
    assert client.document("allowlist/zoe@lab.org").get().to_dict() == {}  # not an admin
    assert tool.grant_experimenter(client, app, "Zoe@Lab.org", admin=True) == uid
    assert client.document("allowlist/zoe@lab.org").get().to_dict() == {"isAdmin": True}

    zoe = User(uid, "zoe@lab.org", claims={"role": "experimenter"})
    assert rest.call(zoe, "get", s.E1) == 200  # an admin reads every experiment
    assert rest.call(User(uid, claims={"role": "experimenter"}), "get", s.E1) == 403


def test_a_society_player_is_named_in_the_settings_and_acts_for_its_member(setup, identity) -> None:
    rest, client, app = setup
    token = tool.player_token(client, app, "s1", 2)
    uid = _claims(token)["uid"]
    assert uid == "player-s1-2" and uid in identity.users
    players = client.document(s.S1).get().to_dict()["settings"]["humanPlayers"]
    assert players == {"2": "player-s1-2", "3": "uid-ivo"}  # hana's seat handed over
    try:
        player = User(uid)
        assert rest.call(s.HANA, "get", f"{s.S1}/members/2") == 403
        assert rest.call(player, "get", f"{s.S1}/members/3") == 403
        assert rest.call(player, "get", f"{s.S1}/members/2") == 200
        action = s.society_action(2)
        assert rest.call(player, "create", f"{s.S1}/days/00001/actions/2-1", action) == 200
    finally:
        rest.reset()
        rest.seed(s.documents())


def test_only_a_human_member_gets_a_player(setup, identity) -> None:
    _, client, app = setup
    with pytest.raises(DocumentError) as error:
        tool.player_token(client, app, "s1", 1)
    assert "humanPlayers: members ['1'] are not in humans [2, 3]" in str(error.value)
    with pytest.raises(DocumentError):
        tool.player_token(client, app, "nope", 2)
    assert not identity.users
    assert "1" not in client.document(s.S1).get().to_dict()["settings"]["humanPlayers"]


def test_an_owner_is_given_a_society_the_rules_then_scope_to_it(setup, identity) -> None:
    rest, client, _ = setup
    try:
        assert rest.call(s.BOB, "get", s.S1) == 403  # gina's
        assert tool.set_owner(client, s.S1, "Bob@Lab.org") == "bob@lab.org"
        assert rest.call(s.BOB, "get", s.S1) == 200
        assert rest.call(s.BOB, "update", s.S1, {"status": "paused"}) == 200
        assert rest.call(s.GINA, "get", s.S1) == 403
        for path in (s.E1, "societies", f"{s.S1}/members/1", "societies/nope"):
            with pytest.raises(DocumentError):
                tool.set_owner(client, path, "bob@lab.org")
    finally:
        rest.reset()
        rest.seed(s.documents())


def test_under_the_strict_rules_a_participant_reads_its_alerts_only_signed_in(
    setup, identity
) -> None:
    """firestore.strict.rules: the participant signed in with tools.auth's token reads its
    alerts; nobody reads them without signing in (the default rules allow that)."""
    rest, client, app = setup
    alerts = f"{s.PAT_P}/alerts"
    assert rest.call(None, "list", alerts) == 200  # the default ruleset
    rest.put_rules(STRICT.read_text())
    try:
        signed_in = User(_claims(tool.participant_token(client, app, "e1", "uid-pat"))["uid"])
        assert rest.call(signed_in, "list", alerts) == 200
        assert rest.call(None, "list", alerts) == 403
        assert rest.call(None, "list", "experimenters") == 403
    finally:
        rest.put_rules(RULES.read_text())
