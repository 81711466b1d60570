// The live view: redraws from each `state` server-sent event (emulator state, no reload).
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  Object.entries(attrs).forEach(([key, value]) => node.setAttribute(key, value));
  children.forEach((child) => node.append(child));
  return node;
};

function progress(agent, total) {
  if (agent.kind === "mediator") return el("td", {});
  const done = agent.status === "SUCCESS" ? total : Math.max(agent.stage_number - 1, 0);
  const bar = el("progress", { max: String(total || 1), value: String(done) });
  return el("td", {}, bar, ` ${agent.stage_number || "-"}/${total}`);
}

function agentRow(agent, total) {
  const model = agent.runs_on && agent.runs_on !== agent.model.split(" ")[0]
    ? `${agent.model} → ${agent.runs_on}` : agent.model;
  const status = el("td", { class: `status ${agent.status}` }, agent.status);
  if (agent.blocked_on) status.append(el("div", { class: "blocked" }, `blocked on ${agent.blocked_on}`));
  return el("tr", { "data-id": agent.id, class: agent.kind },
    el("td", {}, `${agent.name || agent.id} `, el("span", { class: "muted" }, `${agent.kind} ${agent.id.slice(0, 8)}`),
      agent.role ? el("div", { class: "role" }, agent.role) : ""),
    el("td", { class: "stage" }, agent.stage), progress(agent, total), status,
    el("td", {}, model), el("td", { class: "calls" }, String(agent.calls)),
    el("td", { class: "tokens" }, String(agent.tokens)));
}

function chatItem(chat) {
  const thread = chat.thread ? `(${chat.thread}) ` : "";
  return el("li", {}, el("span", { class: "muted" }, `${chat.stage} ${thread}`),
    el("strong", {}, `${chat.who}: `), chat.text);
}

function errorRow(error) {
  const mark = error.resolved ? "✓ resolved" : "⚠ open";
  return el("tr", { class: error.resolved ? "resolved" : "open" },
    el("td", { class: "mark" }, mark), el("td", {}, error.document),
    el("td", {}, el("code", {}, error.field)),
    el("td", {}, error.reason + (error.occurrences > 1 ? ` ×${error.occurrences}` : "")));
}

function totals(agents) {
  const sum = (key) => agents.reduce((total, agent) => total + agent[key], 0);
  const done = agents.filter((agent) => agent.status === "SUCCESS").length;
  const people = agents.filter((agent) => agent.kind !== "mediator").length;
  return `${done}/${people} at SUCCESS · ${sum("calls")} model calls · ${sum("tokens")} tokens`;
}

function draw(state) {
  document.getElementById("title").textContent = state.name;
  document.getElementById("totals").textContent = totals(state.agents);
  const total = state.stages.length;
  document.querySelector("#agents tbody").replaceChildren(...state.agents.map((a) => agentRow(a, total)));
  const chats = document.getElementById("chats");
  chats.replaceChildren(...state.chats.map(chatItem));
  chats.scrollTop = chats.scrollHeight;
  const errors = state.errors.length
    ? state.errors.map(errorRow)
    : [el("tr", {}, el("td", { class: "muted" }, "no error records"))];
  document.querySelector("#errors tbody").replaceChildren(...errors);
}

const source = new EventSource(`/api/experiments/${window.EXPERIMENT_ID}/events`);
source.addEventListener("state", (event) => draw(JSON.parse(event.data)));
source.onopen = () => { document.getElementById("connection").textContent = "live"; };
source.onerror = () => { document.getElementById("connection").textContent = "reconnecting…"; };
