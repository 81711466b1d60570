"""A debate's readable transcript (Markdown): settings, layers, clusters, rounds and every
statement, the final decision."""

from __future__ import annotations

from shared.debate.models import StatementKind
from tools.debate.state import DebateState


def _cluster_lines(state: DebateState, cluster_id: str) -> list[str]:
    lines: list[str] = []
    for rnd in (r for r in state.rounds if r.cluster_id == cluster_id):
        head = rnd.kind == StatementKind.HEAD_OPENING
        title = "Head agent's opening statement" if head else f"Round {rnd.index} ({rnd.kind})"
        lines.append(f"#### {title}\n")
        for s in (s for s in state.statements if s.round_id == rnd.id):
            lines.append(f"- **{s.agent}** ({s.conclusion}, {s.tokens} tokens): {s.text}")
        lines.append("")
    return lines


def markdown(state: DebateState) -> str:
    d = state.debate
    p = state.progress()
    lines = [
        f"# Debate {d.name}\n",
        f"- mode: {d.mode}; layers: {d.num_layers}; rounds: {d.num_rounds}; "
        f"token limit: {d.token_limit}; seed: {d.seed}",
        f"- data entries: {len(d.data)}; agents: {len(state.agents)}; statements: "
        f"{p['statements']}; tokens: {p['tokens']}; model calls: {p['modelCalls']}",
        "",
    ]
    for layer in state.layers:
        lines.append(f"## Layer {layer.index}\n")
        for c in (c for c in state.clusters if c.layer == layer.index):
            lines.append(f"### {c.id} {c.label}: {', '.join(c.members)}\n")
            if c.reason:
                lines.append(f"_Debates: {c.debates} ({c.reason})_\n")
            lines.extend(_cluster_lines(state, c.id))
    decision = d.decision or {}
    lines.append("## Final decision\n")
    if decision:
        lines.append(f"**{decision.get('conclusion')}**\n")
        lines.extend(f"- {agent}: {vote}" for agent, vote in decision.get("votes", {}).items())
    else:
        lines.append("_not reached yet_")
    return "\n".join(lines) + "\n"
