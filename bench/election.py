"""Model calls per delivered chat message, and the election counters, by agents and policy.

N agents in one group chat; a human message starts the conversation and the agents keep it going
(each agent reply is a new message fanned out to the others). After K messages the benchmark ends
the discussion (``discussionEndTimestamp``, as the watchdog does at a time limit) and waits until
every turn has finished. A message counts once its election is decided, i.e. every message but
the last (which the end cut short); for each, the model calls are its ``chat reply to {id}`` log
entries and its replies are the agent messages traced back to one of those calls (same agent,
same text). If the conversation dies out (every agent declined), the human speaks again.

Duplicates (must be 0): a message answered by more than one agent, or a message id twice.
"""

from __future__ import annotations

import collections
import math
import random
import statistics
import time
from typing import Any

from google.cloud import firestore

from bench import chat
from bench.fake_model import API_TYPE, fake_model, scripted_model
from bench.profile import delivery_profile
from bench.stack import Stack, dist, say
from emulator.runtime import LocalRuntime
from functions.chat.conducted import CONDUCTOR_ID

NOT_ELECTIONS = ("initial-", "ready-", "quota-", "left-", "turn-", "answered-", "conductor-")
STALL_S = 1.5
FAKE_LATENCY_S = 0.2


def _stalled(rt: LocalRuntime, since: float) -> bool:
    """No new message for STALL_S and no delivery ended lately: maybe the conversation died."""
    if time.time() - since < STALL_S:
        return False
    records = rt.deliveries
    return not records or max(r.ended for r in records) < time.time() - STALL_S


def _converse(
    rt: LocalRuntime,
    db: firestore.Client,
    room: chat.ChatRoom,
    k: int,
    rng: random.Random,
    label: str,
) -> dict[str, Any]:
    """Run the conversation to ``k`` messages, end it, wait for every turn to finish."""
    humans = 0

    def human() -> None:
        nonlocal humans
        chat.say_as_human(
            db, room, f"h{humans:03d}-{rng.getrandbits(32):08x}", "What matters most here?"
        )
        humans += 1

    t0 = time.time()
    human()
    count, changed, printed = 1, time.time(), time.monotonic()
    while count < k + 1:
        time.sleep(0.1)
        now = chat.message_count(db, room)
        if now != count:
            count, changed = now, time.time()
        elif _stalled(rt, changed):
            try:
                rt.wait_until_idle(timeout=10)
            except TimeoutError:
                changed = time.time()
                continue
            if chat.message_count(db, room) == count:
                human()  # nobody wanted to answer: the human speaks again
            changed = time.time()
        if time.monotonic() - printed >= 5:
            say(f"election: {label}: {count}/{k + 1} messages")
            printed = time.monotonic()
    chat.end_discussion(db, room)
    ended = time.time()
    rt.wait_until_idle(timeout=600)
    return {"humanMessages": humans, "conversationSeconds": round(ended - t0, 2)}


def _trace_replies(
    messages: list[chat.Message],
    by_trigger: dict[str, list[chat.ModelCall]],
    private_of: dict[str, str],
) -> tuple[dict[str, list[chat.Message]], int]:
    """Each agent message traced to the message it answered: (replies by trigger, untraced)."""
    position = {m.id: i for i, m in enumerate(messages)}
    replies: dict[str, list[chat.Message]] = collections.defaultdict(list)
    untraced = 0
    for i, m in enumerate(messages):
        if m.sender == chat.HUMAN or m.type != "participant":
            continue
        candidates = [
            trigger
            for trigger, calls in by_trigger.items()
            if position.get(trigger, len(messages)) < i
            and any(
                c.participant_id == private_of.get(m.sender)
                and c.status == "OK"
                and isinstance(c.parsed, dict)
                and str(c.parsed.get("response", "")).strip() == m.text.strip()
                for c in calls
            )
        ]
        if not candidates:
            untraced += 1
            continue
        replies[max(candidates, key=lambda t: position[t])].append(m)
    return replies, untraced


def _ci95(values: list[int]) -> list[float] | None:
    """Normal-approximation 95% interval of the mean."""
    if len(values) < 2:
        return None
    mean, se = statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))
    return [round(mean - 1.96 * se, 3), round(mean + 1.96 * se, 3)]


def _analyse(db: firestore.Client, room: chat.ChatRoom, rt: LocalRuntime) -> dict[str, Any]:
    messages = chat.messages(db, room)
    calls = chat.model_calls(db, room.experiment_id)
    by_trigger = chat.reply_calls(calls)
    private_of = {pub: priv for priv, pub in room.public_ids.items()}
    replies, untraced = _trace_replies(messages, by_trigger, private_of)
    decided = messages[:-1]  # the last message was cut short by the end of the discussion
    per_message_calls = [len(by_trigger.get(m.id, [])) for m in decided]
    per_message_replies = [len(replies.get(m.id, [])) for m in decided]
    reply_latency = [
        (replies[m.id][0].committed - m.committed) * 1000 for m in decided if replies.get(m.id)
    ]
    ids = [m.id for m in messages]
    logs = chat.trigger_logs(db, room)
    elections = {k: v for k, v in logs.items() if not k.startswith(NOT_ELECTIONS)}
    elected_ids = [v["messageId"] for v in elections.values() if "messageId" in v]
    agent_ids = {m.id for m in messages if m.sender != chat.HUMAN}
    claims_without_reply = sum(
        1
        for k, v in elections.items()
        if "messageId" not in v and not replies.get(k.rsplit("-", 1)[0])
    )
    turns = [r for r in rt.deliveries if r.function == "onAgentTurn" and not r.dropped]
    duplicates = sum(max(0, n - 1) for n in per_message_replies) + len(ids) - len(set(ids))
    return {
        "messages": len(messages),
        "decidedMessages": len(decided),
        "agentMessages": len(agent_ids),
        "modelCallsPerMessage": round(statistics.fmean(per_message_calls), 3) if decided else None,
        "modelCallsPerMessageCi95": _ci95(per_message_calls),
        "modelCallsPerMessageDist": dist([float(x) for x in per_message_calls], 1),
        "repliesPerMessage": round(statistics.fmean(per_message_replies), 3) if decided else None,
        "duplicates": duplicates,
        "untracedAgentMessages": untraced,
        "electionRecords": len(elections),
        "electionRecordsPerMessage": round(len(elections) / len(decided), 3) if decided else None,
        "electedWithoutMessage": sum(1 for x in elected_ids if x not in agent_ids),
        "claimsWithoutReply": claims_without_reply,
        "replyCalls": sum(len(v) for v in by_trigger.values()),
        "otherModelCalls": sum(1 for c in calls if not c.description.startswith("chat reply to ")),
        "failedCalls": sum(1 for c in calls if c.status != "OK"),
        "turnsPerMessage": round(len(turns) / len(messages), 2) if messages else None,
        "replyLatencyMs": dist(reply_latency, 1),
        "modelLatencyMs": dist([c.latency_ms for c in calls], 1),
        "deliveries": delivery_profile(rt.deliveries),
    }


def conductor_stats(db: firestore.Client, experiment_id: str) -> dict[str, Any]:
    """Conductor policy: its calls, and how often the agent it picked declined to answer."""
    calls = chat.reply_calls(chat.model_calls(db, experiment_id))
    per_message, answers, declines = [], 0, 0
    for message_calls in calls.values():
        per_message.append(sum(1 for c in message_calls if c.participant_id == CONDUCTOR_ID))
        for c in message_calls:
            if c.participant_id != CONDUCTOR_ID and c.status == "OK":
                answers += 1
                declines += isinstance(c.parsed, dict) and c.parsed.get("shouldRespond") is False
    return {
        "conductorCallsPerMessage": round(statistics.fmean(per_message), 3)
        if per_message
        else None,
        "pickedAgentAnswers": answers,
        "pickedAgentDeclines": declines,
        "declineRate": round(declines / answers, 3) if answers else None,
    }


def _one(
    stack: Stack,
    agents: int,
    policy: str,
    k: int,
    *,
    workers: int,
    fake: bool,
    rng: random.Random,
) -> dict[str, Any]:
    model = f"fake {FAKE_LATENCY_S * 1000:.0f} ms" if fake else "scripted"
    label = f"{agents} agents, {policy}, {model}, {workers} workers"
    say(f"election: {label}: up to {k + 1} messages")
    cpu = stack.cpu()
    with stack.runtime(
        f"election-{agents}-{policy}-{'fake' if fake else 's'}", workers=workers
    ) as rt:
        db = firestore.Client(project=rt.project)
        models = fake_model(FAKE_LATENCY_S, rng.randrange(2**31)) if fake else scripted_model()
        with models:
            room = chat.create(
                db, agents, policy=policy, api_type=API_TYPE if fake else "SCRIPTED", rng=rng
            )
            rt.wait_until_idle(timeout=120)  # everyone at the chat; nobody opens an empty chat
            rt.clear_deliveries()
            t0 = time.time()
            run = _converse(rt, db, room, k, rng, label)
            wall = time.time() - t0
            out = {
                "agents": agents,
                "policy": policy,
                "model": model,
                "workers": workers,
                **run,
                "wallSeconds": round(wall, 2),
                **_analyse(db, room, rt),
                **(conductor_stats(db, room.experiment_id) if policy == "conductor" else {}),
            }
        rt.reset()
        db.close()
    out["cpu"] = cpu.stop()
    say(
        f"election: {label}: {out['modelCallsPerMessage']} calls/message, "
        f"{out['repliesPerMessage']} replies/message, {out['duplicates']} duplicates, "
        f"{out['wallSeconds']} s"
    )
    return out


def run(
    stack: Stack,
    agents: tuple[int, ...],
    messages: dict[str, int],
    fake: list[tuple[int, str, int | None, int]],
    seed: int,
    workers: int,
) -> dict[str, Any]:
    """Scripted runs for every (agents, policy) with ``messages[policy]`` messages; then
    ``fake``: (agents, policy, workers or None, messages) on the fixed-latency provider."""
    rng = random.Random(seed)
    runs = [
        _one(stack, n, policy, messages[policy], workers=workers, fake=False, rng=rng)
        for n in agents
        for policy in ("race", "claim")
    ]
    runs += [
        _one(stack, n, policy, k, workers=w or workers, fake=True, rng=rng)
        for n, policy, w, k in fake
    ]
    return {"runs": runs}
