// The society live view: redraws from each `state` server-sent event.
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  Object.entries(attrs).forEach(([key, value]) => node.setAttribute(key, value));
  children.forEach((child) => node.append(child));
  return node;
};
const cells = (...values) => values.map((v) => el("td", {}, String(v)));
const fill = (selector, rows) => document.querySelector(selector).replaceChildren(...rows);

function draw(state) {
  document.getElementById("title").textContent = `${state.name || state.id} (${state.status})`;
  document.getElementById("day").textContent = state.problem ||
    `day ${state.day}: ${state.day_status}, ${state.acted}/${state.expected} acted`;
  fill("#days tbody", state.days.map((d) => el("tr", {}, ...cells(d.day, d.actions, d.invalid,
    d.rejected, d.no_action, d.active, d.dormant, d.model_calls, d.prompt_tokens,
    `${d.opened} / ${d.passed} / ${d.failed}`, d.pool_food, d.reasons.join("; ")))));
  fill("#proposals", state.proposals.map((p) => el("li", {},
    `#${p.id} ${p.title} (${p.proposalType}): ${p.yes} yes, ${p.no} no, ${p.abstain} abstain; closes day ${p.closesDay}`)));
  fill("#laws", state.laws.map((l) => el("li", {}, `#${l.id} ${l.title} (${l.proposalType}, day ${l.passedDay})`)));
  fill("#posts", state.posts.map((p) => el("li", {}, el("strong", {}, `#${p.id} ${p.authorName}: `), p.content)));
  fill("#errors tbody", state.errors.map((e) => el("tr", {}, ...cells(e.document, e.field, e.reason))));
  fill("#members tbody", state.members.map((m) => el("tr", { class: m.status }, ...cells(m.id,
    m.name + (m.human ? " (human)" : ""), m.personality, m.status, m.food, m.energy, m.materials))));
}

async function post(command, body) {
  const response = await fetch(`/api/societies/${window.SOCIETY_ID}/${command}`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}),
  });
  document.getElementById("answer").textContent = JSON.stringify(await response.json());
}

document.getElementById("pause").onclick = () => post("pause");
document.getElementById("resume").onclick = () => post("resume");
document.getElementById("give").onclick = () => post("give", {
  agentId: Number(document.getElementById("agent").value),
  resource: document.getElementById("resource").value,
  amount: Number(document.getElementById("amount").value),
  note: "console",
});

const source = new EventSource(`/api/societies/${window.SOCIETY_ID}/events`);
source.addEventListener("state", (event) => {
  document.getElementById("connection").textContent = "live";
  draw(JSON.parse(event.data));
});
source.onerror = () => { document.getElementById("connection").textContent = "reconnecting…"; };
