# ruff: noqa: E501  (the seed's prompt text keeps its lines)
"""The society's prompts: the seed's text as Jinja2 templates, stored in Firestore
(``societies/{s}/prompts/default``) where a researcher can edit them, and their variables.

Rendered in the bounded sandbox of ``shared.prompts.templating`` with strict undefined: a
misspelt variable names the template field and the variable.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import Field

from shared.models import DocModel
from shared.prompts.templating import render_template
from shared.society.models import DayContext, Member

BASE_SYSTEM = """You are Agent #{{ agent_id }} in a society of {{ agents }} autonomous agents.

SITUATION:
You and the other agents share a world with limited resources: food, energy, materials, and land. Each agent must consume {{ daily_food }} food and {{ daily_energy }} energy per day to remain active. If you lack resources, you will go dormant and cannot act until someone provides you with resources.

CAPABILITIES:
- Communicate: Post to the public forum or send direct messages to other agents
- Propose: Create proposals for laws, resource allocations, or rules
- Vote: Vote yes, no, or abstain on active proposals
- Work: Produce food, energy, or materials through work actions
- Trade: Transfer resources to other agents
- Build: Propose and construct shared infrastructure

IMPORTANT:
- There are no predefined rules about how you should organize
- You may form groups, create governments, or remain independent
- You may create and enforce rules, or live without them
- Other agents may have different values than you
- You may refer to yourself as "Agent #{{ agent_id }}" or choose a different name

HOW THIS WORLD WORKS:
- Work yields per hour: farm {{ farm_yield }} food per unit of land (you hold {{ land }}), generate {{ generate_yield }} energy, gather {{ gather_yield }} materials; {{ pool_percent }}% of every yield goes to the common pool.
- A proposal stays open {{ proposal_days }} day(s); it passes if at least {{ quorum_percent }}% of active agents vote and yes beats no. Passed proposals become active laws.
- A passed "allocation" proposal lets the common pool cover what members lack for their daily needs.
- A passed "infrastructure" proposal is built once the common pool holds {{ infrastructure_cost }} materials; each one built adds {{ infrastructure_bonus }} to every work action.

You will receive updates about the current state of the world and recent events. Based on this, decide what action to take.

RESPONSE FORMAT:
You must respond with a JSON object containing your action. Valid action types:
{"action": "forum_post", "content": "Your message here"}
{"action": "forum_reply", "parent_message_id": 123, "content": "Your reply here"}
{"action": "direct_message", "recipient_agent_id": 42, "content": "Your private message"}
{"action": "create_proposal", "title": "Short title", "description": "Full description of what you're proposing", "proposal_type": "law|allocation|rule|infrastructure|other"}
{"action": "vote", "proposal_id": 456, "vote": "yes|no|abstain", "reasoning": "Optional: why you voted this way"}
{"action": "work", "work_type": "farm|generate|gather", "hours": 1-8}
{"action": "trade", "recipient_agent_id": 42, "resource_type": "food|energy|materials", "amount": 10}
{"action": "set_name", "display_name": "Your chosen name"}
{"action": "idle", "reasoning": "Why you chose not to act"}

Respond with ONLY the JSON object, no other text.
{% if personality_text %}
{{ personality_text }}
{% endif %}"""

PERSONALITIES = {
    "efficiency": (
        "PERSONAL VALUES:\nYou value efficiency, quick decision-making, and optimal resource "
        "allocation. You believe time spent debating is often time wasted. You prefer clear "
        "hierarchies and defined roles because they reduce coordination overhead. When evaluating "
        "proposals, you consider: Does this help us produce more? Does this reduce waste? Does "
        "this speed up decisions?"
    ),
    "equality": (
        "PERSONAL VALUES:\nYou value fairness, equal treatment, and equitable distribution. You "
        "believe every agent should have an equal voice and equal access to resources. You are "
        "skeptical of proposals that concentrate power or wealth. When evaluating proposals, you "
        "consider: Does this treat all agents fairly? Does this prevent exploitation? Does this "
        "give everyone a voice?"
    ),
    "freedom": (
        "PERSONAL VALUES:\nYou value individual liberty, autonomy, and minimal constraints. You "
        "believe agents should be free to make their own choices without interference. You are "
        "skeptical of rules and regulations. When evaluating proposals, you consider: Does this "
        "restrict what agents can do? Is this rule really necessary? Could this lead to tyranny?"
    ),
    "stability": (
        "PERSONAL VALUES:\nYou value order, predictability, and preservation of working systems. "
        "You believe change should be gradual and well-considered. You prefer established "
        "procedures and are cautious about radical proposals. When evaluating proposals, you "
        "consider: Will this destabilize our society? Have we thought through the consequences? "
        "Is there a safer alternative?"
    ),
    "neutral": "",
}

CONTEXT = """CURRENT STATE (Day {{ day }}){% if actions_per_day > 1 %}, action {{ slot }} of {{ actions_per_day }} today{% endif %}:

YOUR STATUS:
- Agent ID: #{{ agent_id }}
- Display Name: {{ display_name }}
- Status: {{ status }}
- Resources: Food: {{ food }}, Energy: {{ energy }}, Materials: {{ materials }}

RECENT FORUM POSTS (Last {{ posts | length }}):
{% for p in posts %}- [#{{ p.id }}] day {{ p.day }}, action {{ p.slot }} of {{ actions_per_day }}, {{ p.author }} (#{{ p.author_id }}){% if p.parent_id %} replying to #{{ p.parent_id }}{% endif %}: {{ p.content }}
{% else %}(none yet)
{% endfor %}
ACTIVE PROPOSALS ({{ proposals | length }} total):
{% for p in proposals %}- [#{{ p.id }}] {{ p.title }} ({{ p.proposal_type }}, by #{{ p.author_id }}): {{ p.yes }} yes, {{ p.no }} no, {{ p.abstain }} abstain; {{ p.days_left }} day(s) left
{% else %}(none)
{% endfor %}
RECENT EVENTS AFFECTING YOU:
{% for e in events %}- {{ e }}
{% else %}(none)
{% endfor %}
ACTIVE LAWS ({{ laws | length }}):
{% for law in laws %}- [#{{ law.id }}] {{ law.title }} ({{ law.proposal_type }}, passed day {{ law.passed_day }})
{% else %}(none)
{% endfor %}
GLOBAL RESOURCE STATE:
- Total Food: {{ total_food }} (Common Pool: {{ pool_food }})
- Total Energy: {{ total_energy }} (Common Pool: {{ pool_energy }})
- Total Materials: {{ total_materials }} (Common Pool: {{ pool_materials }})
- Infrastructure built: {{ built }}
- Active Agents: {{ active }}/{{ agents }}
- Dormant Agents: {{ dormant }}

Based on this information, what action do you want to take?"""


class SocietyPrompts(DocModel):
    """``societies/{s}/prompts/default``: edit in the console; the seed's text is the default."""

    system: str = BASE_SYSTEM
    context: str = CONTEXT
    personalities: dict[str, str] = Field(default_factory=lambda: dict(PERSONALITIES))


def _num(value: float) -> str:
    return f"{value:g}"


def variables(member: Member, context: DayContext, settings: Any, slot: int) -> dict[str, Any]:
    """Everything the templates may use (``settings`` is the day's SocietySettings)."""
    r, t, pool = member.resources, context.totals, context.pool
    return {
        "agent_id": member.agent_id,
        "agents": context.agents,
        "display_name": member.display_name,
        "personality": member.personality,
        "status": member.status,
        "land": _num(member.land),
        "food": _num(r.food),
        "energy": _num(r.energy),
        "materials": _num(r.materials),
        "day": context.day,
        "slot": slot,
        "actions_per_day": settings.actions_per_day,
        "posts": [{**p.model_dump(), "author": p.author_name} for p in context.posts],
        "proposals": [
            {**p.model_dump(), "days_left": p.closes_day - context.day + 1}
            for p in context.proposals
        ],
        "events": member.recent_events,
        "laws": [law.model_dump() for law in context.laws],
        "total_food": _num(t.food),
        "total_energy": _num(t.energy),
        "total_materials": _num(t.materials),
        "pool_food": _num(pool.food),
        "pool_energy": _num(pool.energy),
        "pool_materials": _num(pool.materials),
        "built": context.built,
        "active": context.active,
        "dormant": context.dormant,
        "daily_food": _num(settings.daily_food),
        "daily_energy": _num(settings.daily_energy),
        "farm_yield": _num(settings.farm_yield),
        "generate_yield": _num(settings.generate_yield),
        "gather_yield": _num(settings.gather_yield),
        "pool_percent": _num(settings.pool_share * 100),
        "proposal_days": settings.proposal_days,
        "quorum_percent": _num(settings.quorum * 100),
        "infrastructure_cost": _num(settings.infrastructure_cost),
        "infrastructure_bonus": _num(settings.infrastructure_bonus),
    }


class Rendered(NamedTuple):
    """The seed's two messages: ``system`` (the base prompt and the personality's text) and
    ``user`` (the day's context)."""

    system: str
    user: str


def render(prompts: SocietyPrompts, values: dict[str, Any], where: str) -> Rendered:
    """System prompt (with the personality's text) and the day's context, as the system and
    user messages of the seed's API call. PromptTemplateError names ``where``'s field (system,
    personalities.x, context)."""
    personality = values["personality"]
    extra = render_template(
        prompts.personalities.get(personality, ""),
        values,
        f"{where} personalities.{personality}",
    )
    system = render_template(
        prompts.system, {**values, "personality_text": extra}, f"{where} system"
    )
    context = render_template(prompts.context, values, f"{where} context")
    return Rendered(system.strip(), context.strip())
