"""Chat messages as the backend saw them: the sender's stored profile and Firestore's own time.

A chat message carries its sender's display profile and a timestamp, both written by whoever
wrote the message. The security rules check them for client writes, but the Firebase console
and admin clients bypass the rules: a forged ``profile.name`` would put "Moderator: ..." into
every agent's prompt, and a timestamp in 2099 would sort after everything said later, so every
agent would think the conversation had moved on and stay silent. So whatever builds prompts or
public data from a chat reads it through here: each participant's or mediator's message shows
the profile stored for its ``senderId`` (nothing, so its id, when there is none), and is
ordered and dated by the document's create time, which Firestore sets and nobody can write.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from google.cloud import firestore

from functions import reads, store
from shared import paths
from shared.models import ChatMessage, ParticipantProfile, ProfileBase, UserType

SENDER_COLLECTIONS = {UserType.PARTICIPANT: paths.PARTICIPANT, UserType.MEDIATOR: paths.MEDIATOR}
"""Where the profile of a sender of each type is stored (by its publicId)."""
IN_LIMIT = 30
"""Firestore's limit on the values of one ``in`` filter."""
PROFILE_FIELDS = ["publicId", "name", "avatar", "pronouns"]

SenderKey = tuple[UserType, str]
_recent: reads.Recent[dict[SenderKey, ProfileBase]] = reads.Recent(max_age_s=1.0)
"""The senders' profiles as this instance read them in the last second (``reads.Recent``):
every read of a chat shows them, and they decide nothing (a reply's re-check after its model
reads the chat again, and took them again, one round trip after the other)."""


def as_seen(
    experiment_id: str,
    stored: Sequence[tuple[datetime, ChatMessage]],
    known: Mapping[SenderKey, ProfileBase] | None = None,
) -> list[ChatMessage]:
    """Parsed messages, each with its document's create time: in that order, dated by it, and
    showing the sender's stored profile (``known``: profiles read already, see
    ``stored_profiles``)."""
    profiles = stored_profiles(experiment_id, [message for _, message in stored], known)
    ordered = sorted(stored, key=lambda pair: (pair[0], pair[1].id))
    return [_as_seen(message, created, profiles) for created, message in ordered]


def _as_seen(
    message: ChatMessage, created: datetime, profiles: dict[SenderKey, ProfileBase]
) -> ChatMessage:
    update: dict[str, object] = {"timestamp": created}
    if message.type in SENDER_COLLECTIONS:
        update["profile"] = profiles.get((message.type, message.sender_id), ProfileBase())
    return message.model_copy(update=update)


def member_profiles(members: Iterable[ParticipantProfile]) -> dict[SenderKey, ProfileBase]:
    """The stored display profiles of participants read already (a cohort's members), by
    (type, publicId), as ``stored_profiles`` would find them."""
    return {
        (UserType.PARTICIPANT, m.public_id): ProfileBase(
            name=m.name, avatar=m.avatar, pronouns=m.pronouns
        )
        for m in members
        if m.public_id
    }


def stored_profiles(
    experiment_id: str,
    messages: Sequence[ChatMessage],
    known: Mapping[SenderKey, ProfileBase] | None = None,
) -> dict[SenderKey, ProfileBase]:
    """The stored display profile of every participant and mediator who sent one of the
    messages, by (type, publicId): those in ``known`` (read in the same round trip as the
    chat: a group chat's cohort members), the others by one query per 30 senders of a type
    (a round trip after the chat's read)."""
    known = known or {}
    queries = []
    for sender_type, pattern in SENDER_COLLECTIONS.items():
        ids = sorted(
            {
                m.sender_id
                for m in messages
                if m.type == sender_type and m.sender_id and (m.type, m.sender_id) not in known
            }
        )
        collection = store.db().collection(paths.collection_of(pattern, experimentId=experiment_id))
        for start in range(0, len(ids), IN_LIMIT):
            chunk = ids[start : start + IN_LIMIT]
            query = collection.where(filter=firestore.FieldFilter("publicId", "in", chunk))
            key = (experiment_id, sender_type, tuple(chunk))
            load = functools.partial(_profiles, query, sender_type)
            queries.append(functools.partial(_recent.recent, key, load))
    found: dict[SenderKey, ProfileBase] = dict(known)
    for profiles in reads.all_together(queries):  # participants' and mediators' queries at once
        found.update(profiles)
    return found


def _profiles(query: firestore.Query, sender_type: UserType) -> dict[SenderKey, ProfileBase]:
    """The senders' profiles a query finds."""
    found: dict[SenderKey, ProfileBase] = {}
    for snap in query.select(PROFILE_FIELDS).get():
        data = snap.to_dict() or {}
        profile = ProfileBase.model_validate({k: data.get(k) for k in PROFILE_FIELDS[1:]})
        found[(sender_type, str(data.get("publicId")))] = profile
    return found
