// The debate live view: redraws from each `state` server-sent event.
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  Object.entries(attrs).forEach(([key, value]) => node.setAttribute(key, value));
  children.forEach((child) => node.append(child));
  return node;
};

function clusterRow(c) {
  const debates = c.debates === null ? "…" : `${c.debates ? "yes" : "no"} (${c.reason})`;
  return el("tr", { "data-id": c.id, class: c.complete ? "complete" : "open" },
    el("td", {}, `${c.id} ${c.name}`), el("td", {}, c.members.join(", ")),
    el("td", {}, c.head || "-"), el("td", {}, c.rounds), el("td", {}, debates));
}

function differenceRow(d) {
  return el("tr", {}, el("td", {}, `L${d.layer}`), el("td", {}, d.a), el("td", {}, d.b),
    el("td", {}, d.difference.toFixed(2)));
}

function statementItem(s) {
  return el("li", {}, el("span", { class: "muted" }, `${s.round} · ${s.tokens} tokens `),
    el("strong", {}, `${s.agent} (${s.conclusion}): `), s.text);
}

function draw(state) {
  const p = state.progress;
  document.getElementById("title").textContent = `${state.name} (${state.mode})`;
  document.getElementById("progress").textContent =
    `${p.status}${p.paused ? " (paused)" : ""} · layer ${p.layer} · clusters ${p.clusters} · ` +
    `rounds ${p.rounds} · statements ${p.statements} · tokens ${p.tokens} · ` +
    `model calls ${p.modelCalls} · errors ${p.errors}`;
  document.getElementById("decision").textContent = state.decision
    ? `Final decision: ${state.decision.conclusion}` : "";
  document.querySelector("#clusters tbody").replaceChildren(...state.clusters.map(clusterRow));
  document.getElementById("statements").replaceChildren(...state.statements.map(statementItem));
  const differences = state.differences.length
    ? state.differences.map(differenceRow)
    : [el("tr", {}, el("td", { class: "muted", colspan: "4" }, "no re-clustering yet"))];
  document.querySelector("#differences tbody").replaceChildren(...differences);
  const errors = state.errors.length
    ? state.errors.map((e) => el("tr", {}, el("td", {}, e.document), el("td", {}, el("code", {}, e.field)), el("td", {}, e.reason)))
    : [el("tr", {}, el("td", { class: "muted" }, "no error records"))];
  document.querySelector("#errors tbody").replaceChildren(...errors);
}

const setPaused = (paused) => fetch(`/api/debates/${window.DEBATE_ID}/paused`, {
  method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ paused }),
});
document.getElementById("pause").addEventListener("click", () => setPaused(true));
document.getElementById("resume").addEventListener("click", () => setPaused(false));

const source = new EventSource(`/api/debates/${window.DEBATE_ID}/events`);
source.addEventListener("state", (event) => draw(JSON.parse(event.data)));
source.onopen = () => { document.getElementById("connection").textContent = "live"; };
source.onerror = () => { document.getElementById("connection").textContent = "reconnecting…"; };
