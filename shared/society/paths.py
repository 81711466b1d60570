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


def day_path(society_id: str, day: int) -> str:
    return sub(society_id, DAY, day=day_id(day))


def state_path(society_id: str, day: int, part: str) -> str:
    return sub(society_id, DAY_STATE, day=day_id(day), part=part)


def snapshot_path(society_id: str, day: int, agent: int) -> str:
    return sub(society_id, DAY_MEMBER, day=day_id(day), agentId=agent)


def action_path(society_id: str, day: int, action_id: str) -> str:
    return sub(society_id, ACTION, day=day_id(day), actionId=action_id)


def tally_path(society_id: str, day: int, shard: int) -> str:
    return sub(society_id, TALLY, day=day_id(day), shard=shard)


def turn_lease(society_id: str, day: int, action_id: str) -> str:
    return sub(society_id, TURN_LEASE, leaseId=f"{day}-{action_id}")


def close_lease(society_id: str, day: int) -> str:
    """The finish's lease (the day's own)."""
    return sub(society_id, CLOSE_LEASE, day=day_id(day))


def shard_lease(society_id: str, day: int, phase: str, shard: int) -> str:
    return sub(society_id, CLOSE_LEASE, day=f"{day_id(day)}-{phase}-{shard:05d}")


def result_id(phase: str, shard: int) -> str:
    """A shard's result of a phase (its done mark), under ``CLOSE_PART``."""
    return f"{phase}-{shard:05d}"


def close_part(society_id: str, day: int, part: str) -> str:
    return sub(society_id, CLOSE_PART, day=day_id(day), part=part)
