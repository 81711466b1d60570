"""Sign-in identities the security rules expect, made with firebase-admin.

    python -m tools.auth participant EXPERIMENT_ID PARTICIPANT_ID [--project P]
    python -m tools.auth experimenter EMAIL [--admin] [--project P]
    python -m tools.auth player SOCIETY_ID MEMBER_ID [--project P]
    python -m tools.auth owner PATH CREATOR [--project P]
    python -m tools.auth api-key EMAIL [--name NAME] [--read-only] [--project P]

The rules know a human participant by its Firebase Auth uid being its participant document id
(firestore.rules); Deliberate Lab has no such link and nothing else creates those users. The
first command creates (or reuses) the Auth user whose uid is the participant's private id and
prints a custom token: the participant's page signs in with ``signInWithCustomToken(token)``.
The second gives a Google-signed-in experimenter access: the custom claim
``role: experimenter`` (which the rules accept) and Deliberate Lab's ``allowlist/{email}`` entry
(which its web app and our rules read; ``isAdmin: true`` only for admins, since Deliberate Lab's
own rules take any ``isAdmin`` value as admin).
The third is for a society member played by a human: it creates the Auth user
``player-{society}-{member}``, names it in the society's ``settings.humanPlayers`` (which the
rules read) and prints its custom token.
The fourth gives a society, debate, conversation or workflow (``societies/s1``) to an
experimenter (its email or uid): the rules let only its creator (and its readers, and admins)
read it, so one written before documents had a creator, or by someone else, is handed over.
The fifth makes a key for the REST API (docs/API.md) owned by that experimenter and prints it
once: only its hash is stored (``experimenters/{email}/apiKeys/{keyId}``, functions/api_keys.py).

Under the strict ruleset (firestore.strict.rules, docs/SECURITY.md) a participant must sign in
with the first command's token: nothing of an experiment is readable without signing in.

Works against a real project (application default credentials; creating custom tokens then
needs a service account that may sign: ``--service-account``) or the emulators
(FIRESTORE_EMULATOR_HOST, FIREBASE_AUTH_EMULATOR_HOST; tokens are unsigned there).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import firebase_admin
from firebase_admin import auth
from google.cloud import firestore

from functions import api_keys
from shared import paths
from shared.models import DocumentError, ParticipantProfile, parse_document
from shared.society import paths as society_paths
from tools import cli, owner
from tools.society import client as society_client

EXPERIMENTER_CLAIM = {"role": "experimenter"}
OWNED = ("societies", "debates", "conversations", "workflows")
"""Collections whose top-level documents carry a ``creator`` (tools/owner.py)."""


def participant_token(
    client: firestore.Client, app: firebase_admin.App, experiment_id: str, participant_id: str
) -> str:
    """A custom token for the human participant (its Auth user created if need be)."""
    path = paths.build(paths.PARTICIPANT, experimentId=experiment_id, participantId=participant_id)
    snap = client.document(path).get()
    profile = parse_document(ParticipantProfile, path, snap.to_dict() if snap.exists else None)
    if profile.is_agent:
        raise DocumentError(path, "agentConfig", "an agent participant does not sign in")
    _user(app, uid=participant_id)
    token = auth.create_custom_token(participant_id, {"experimentId": experiment_id}, app=app)
    return token.decode()


def player_token(
    client: firestore.Client, app: firebase_admin.App, society_id: str, member_id: int
) -> str:
    """A custom token for the person who plays a society's human member; the member's entry in
    ``settings.humanPlayers`` is written first, validated like any setting (the member must be
    one of ``humans``)."""
    snap = client.document(society_paths.society(society_id)).get()
    uid = f"player-{society_id}-{member_id}"
    settings = (snap.to_dict() or {}).get("settings") or {} if snap.exists else {}
    players = {**settings.get("humanPlayers", {}), str(member_id): uid}
    society_client.set_setting(client, society_id, "humanPlayers", players)
    _user(app, uid=uid)
    token = auth.create_custom_token(uid, {"societyId": society_id}, app=app)
    return token.decode()


def grant_experimenter(
    client: firestore.Client, app: firebase_admin.App, email: str, admin: bool = False
) -> str:
    """Make the user with this email an experimenter (created if need be); its uid."""
    user = _user(app, email=email)
    claims = {**(user.custom_claims or {}), **EXPERIMENTER_CLAIM}
    auth.set_custom_user_claims(user.uid, claims, app=app)
    client.document(f"allowlist/{email.lower()}").set({"isAdmin": True} if admin else {})
    return user.uid


def set_owner(client: firestore.Client, path: str, creator: str) -> str:
    """Make ``creator`` the owner of an existing society, debate, conversation or workflow;
    the creator as written."""
    collection, _, document_id = path.strip("/").partition("/")
    if collection not in OWNED or not document_id or "/" in document_id:
        raise DocumentError(path, "creator", f"only documents of {', '.join(OWNED)} have one")
    if not creator.strip():
        raise DocumentError(path, "creator", "an email or a uid is needed")
    ref = client.document(path.strip("/"))
    if not ref.get().exists:
        raise DocumentError(path, "(document)", "does not exist")
    value = owner.normalized(creator)
    ref.update({"creator": value})
    return value


def _user(app: firebase_admin.App, **identity: Any) -> auth.UserRecord:
    """The user with this uid or email, created when there is none."""
    try:
        if "uid" in identity:
            return auth.get_user(identity["uid"], app=app)
        return auth.get_user_by_email(identity["email"], app=app)
    except auth.UserNotFoundError:
        return auth.create_user(**identity, app=app)


PROG = "python -m tools.auth"


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.Parser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--project", default=os.environ.get("GOOGLE_CLOUD_PROJECT"))
    parser.add_argument(
        "--service-account", help="the service account that signs custom tokens (real projects)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    participant = commands.add_parser("participant", help="print a participant's custom token")
    participant.add_argument("experiment_id", type=cli.document_id)
    participant.add_argument(
        "participant_id", type=cli.document_id, help="its private id (the document id)"
    )
    experimenter = commands.add_parser("experimenter", help="give an email experimenter access")
    experimenter.add_argument("email", type=cli.email)
    experimenter.add_argument("--admin", action="store_true")
    player = commands.add_parser("player", help="print a society's human member's custom token")
    player.add_argument("society_id", type=cli.document_id)
    player.add_argument("member_id", type=int)
    owned = commands.add_parser("owner", help="give a society, debate, ... to an experimenter")
    owned.add_argument("path", help="e.g. societies/s1")
    owned.add_argument("creator", help="the experimenter's email or uid")
    key = commands.add_parser("api-key", help="make a REST API key for an experimenter")
    key.add_argument(
        "email", type=cli.email, help="the experimenter's email (Deliberate Lab's experimenter id)"
    )
    key.add_argument("--name", default="python -m tools.auth", help="the key's name")
    key.add_argument("--read-only", action="store_true", help="read permission only")
    return parser.parse_args(argv)


def _api_key(args: argparse.Namespace) -> int:
    """Needs no Firebase Auth: the key is the caller's credential."""
    os.environ["GOOGLE_CLOUD_PROJECT"] = args.project  # the functions' client reads it
    permissions: tuple[api_keys.Permission, ...] = (
        ("read",) if args.read_only else api_keys.PERMISSIONS
    )
    key, key_id = api_keys.create(args.email, args.name, permissions)
    print(key)
    print(
        f"key {key_id} for {args.email.strip().lower()} ({', '.join(permissions)}): save it, "
        "it is not shown again",
        file=sys.stderr,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if not args.project:
        return cli.usage_error(PROG, "no project: pass --project or set GOOGLE_CLOUD_PROJECT")
    if args.command == "api-key":
        return _api_key(args)
    options = {"projectId": args.project}
    if args.service_account:
        options["serviceAccountId"] = args.service_account
    app = firebase_admin.initialize_app(options=options, name=f"tools-auth-{args.project}")
    client = firestore.Client(project=args.project)
    try:
        if args.command == "participant":
            print(participant_token(client, app, args.experiment_id, args.participant_id))
        elif args.command == "player":
            print(player_token(client, app, args.society_id, args.member_id))
        elif args.command == "owner":
            print(f"{args.path} belongs to {set_owner(client, args.path, args.creator)}")
        else:
            uid = grant_experimenter(client, app, args.email, args.admin)
            print(
                f"{args.email} (uid {uid}) is an experimenter"
                + (" and admin" if args.admin else "")
            )
    except DocumentError as error:
        print(error, file=sys.stderr)
        return 1
    finally:
        firebase_admin.delete_app(app)
    return 0


if __name__ == "__main__":
    sys.exit(main())
