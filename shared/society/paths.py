"""Firestore path patterns of a society (Eventarc syntax, like ``shared.paths``)."""

from __future__ import annotations

from shared.paths import SOCIETY, SOCIETY_ACTION

MEMBER = SOCIETY + "/members/{agentId}"
DAY = SOCIETY + "/days/{day}"
DAY_MEMBER = DAY + "/members/{agentId}"
"""A member's state at the start of the day: what its prompt is built from (never rewritten)."""
DAY_STATE = DAY + "/state/{part}"
"""``context`` (what every agent sees) and ``votes`` (open proposals' votes, the closer's)."""
TALLY = DAY + "/tally/{shard}"
"""A day's action count hint, sharded: ``{count}`` incremented with each action (never read
as the truth: it only saves the count query while a day is far from complete)."""
TALLY_SHARDS = 16
ACTION = SOCIETY_ACTION
"""``DAY + "/actions/{actionId}"``: one member's action on a day."""
POST = SOCIETY + "/posts/{postId}"
MESSAGE = SOCIETY + "/messages/{messageId}"
PROPOSAL = SOCIETY + "/proposals/{proposalId}"
EVENT = SOCIETY + "/events/{eventId}"
SUMMARY = SOCIETY + "/summaries/{day}"
INTERVENTION = SOCIETY + "/interventions/{interventionId}"
PROMPTS = SOCIETY + "/prompts/{promptId}"
MODEL_LOG = SOCIETY + "/logs/{logId}"
ERROR_RECORD = SOCIETY + "/errors/{errorId}"
TURN_LEASE = SOCIETY + "/turnLeases/{leaseId}"
CLOSE_LEASE = SOCIETY + "/closeLeases/{day}"
"""The lease of a day's close (``functions.work``): who closes it, and its attempts; a shard's
phase has its own (``{day}-{phase}-{shard}``)."""
CLOSE_PART = DAY + "/close/{part}"
"""A sharded close's records: ``fix-{k}`` (the actions shard k resolves, fixed once),
``{phase}-{k}`` (shard k's result of a phase: its done mark), ``plan-{phase}`` (the society-level
step after a phase)."""
CLOSE_INBOX = DAY + "/closeInbox/{pair}"
"""``{to}-{from}``: what shard ``from``'s actions did to shard ``to``'s members."""


def society(society_id: str) -> str:
    return SOCIETY.format(societyId=society_id)


def sub(society_id: str, pattern: str, **params: object) -> str:
    """A concrete path of ``pattern`` in the society; ids are formatted with str()."""
    return pattern.format(societyId=society_id, **{k: str(v) for k, v in params.items()})


def collection(society_id: str, pattern: str, **params: object) -> str:
    return sub(society_id, pattern.rsplit("/", 1)[0], **params)


def day_id(day: int) -> str:
    """Zero-padded, so the documents list in day order."""
    return f"{day:05d}"
