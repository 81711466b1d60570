// A conductor conversation: redraws from each `state` server-sent event; memory edits and
// cancel go to the JSON API.
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  Object.entries(attrs).forEach(([key, value]) => node.setAttribute(key, value));
  children.forEach((child) => node.append(child));
  return node;
};

function memoryRow(field, kept, active) {
  const input = el("input", { value: kept ? kept.value : "", size: "60", "data-field": field });
  const save = el("button", {}, "Set");
  save.disabled = !active;
  save.addEventListener("click", async () => {
    let value = input.value;
    try { value = JSON.parse(value); } catch (e) { /* plain text */ }
    await fetch(`/api/conductor/${CONVERSATION}/memory/${field}`, {
      method: "PUT", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ value }),
    });
  });
  const who = kept ? `${kept.agent || "console"}, turn ${kept.turn}` : "";
  return el("tr", {}, el("td", {}, el("code", {}, field)), el("td", {}, input, save),
    el("td", { class: "muted" }, who));
}

function stepRow(step) {
  const attempts = el("ul", {}, ...step.attempts.map((a) =>
    el("li", { class: a.status === "OK" ? "" : "error" },
      `#${a.attempt} ${a.status}${a.error ? ": " + a.error : ""}`)));
  const who = step.kind === "agent" ? `${step.agent} (turn ${step.turn}, step ${step.agent_step})` : "conductor";
  return el("tr", { "data-index": String(step.index), class: step.status },
    el("td", {}, String(step.index)), el("td", {}, who),
    el("td", { class: `status ${step.status}` }, step.status + (step.is_final ? " · final" : "")),
    el("td", {}, step.summary, step.error ? el("div", { class: "error" }, step.error) : ""),
    el("td", {}, attempts));
}

function draw(state) {
  if (!state) return;
  document.getElementById("status").textContent = state.status;
  document.getElementById("status").className = `status ${state.status}`;
  document.getElementById("query").textContent = state.query;
  document.getElementById("answer").textContent = state.answer;
  document.getElementById("error").textContent = state.error;
  document.getElementById("cancel").disabled = !state.active;
  const kept = Object.fromEntries(state.memory.map((m) => [m.field, m]));
  const fields = [...new Set([...state.memory_fields, ...Object.keys(kept)])];
  const memory = document.getElementById("memory");
  if (!memory.contains(document.activeElement)) {
    memory.replaceChildren(...fields.map((f) => memoryRow(f, kept[f], state.active)));
  }
  document.getElementById("steps").replaceChildren(
    el("tr", {}, ...["#", "who", "status", "decision / arguments", "attempts"].map((h) => el("th", {}, h))),
    ...state.steps.map(stepRow));
  document.getElementById("errors").replaceChildren(...state.errors.map((e) => el("li", {}, e)));
}

document.getElementById("cancel").addEventListener("click", () =>
  fetch(`/api/conductor/${CONVERSATION}/cancel`, { method: "POST" }));
new EventSource(`/api/conductor/${CONVERSATION}/events`)
  .addEventListener("state", (event) => draw(JSON.parse(event.data)));
