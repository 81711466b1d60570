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
      `#${a.attempt} ${a.status}${a.error ? ": " + a.error : ""}`)),
    ...step.tool_calls.map((c) => el("li", { class: c.is_error ? "error tool" : "tool" },
      `tool ${c.name}(${c.arguments}) ${c.status}${c.result ? " → " + c.result : ""}`)));
  const who = step.kind === "agent" ? `${step.agent} (turn ${step.turn}, step ${step.agent_step})`
    : step.kind === "human" ? `${step.agent} (a person, turn ${step.turn})` : "conductor";
  return el("tr", { "data-index": String(step.index), class: step.status },
    el("td", {}, String(step.index)), el("td", {}, who),
    el("td", { class: `status ${step.status}` }, step.status + (step.is_final ? " · final" : "")),
    el("td", {}, step.summary, step.error ? el("div", { class: "error" }, step.error) : "",
      step.note ? el("div", { class: "muted" }, step.note) : ""),
    el("td", {}, attempts));
}

// The waiting human step's form: one input per answer field (a select for a field with
// choices), pre-filled with the step's values; only the fields changed are sent.
function answerField(field) {
  const input = field.choices.length
    ? el("select", { name: field.name }, el("option", { value: "" }, "—"),
      ...field.choices.map((c) => el("option", { value: c }, c)))
    : el("input", { name: field.name, size: "60" });
  input.value = field.value;
  input.dataset.initial = field.value;
  input.dataset.type = field.type;
  return el("tr", {}, el("td", {}, el("code", {}, field.name)), el("td", {}, input));
}

function typed(input) {
  const { value } = input;
  if (input.dataset.type === "integer" || input.dataset.type === "number") return Number(value);
  if (input.dataset.type === "boolean") return value === "true";
  if (input.dataset.type === "string") return value;
  try { return JSON.parse(value); } catch (e) { return value; }
}

let waitingStep = null;
function drawWaiting(waiting) {
  const section = document.getElementById("waiting");
  section.hidden = !waiting;
  if (!waiting || waiting.step === waitingStep) return;  // keep what the person is typing
  waitingStep = waiting.step;
  document.getElementById("waiting-agent").textContent = waiting.agent;
  document.getElementById("waiting-step").textContent = String(waiting.step);
  document.getElementById("waiting-question").textContent = waiting.question;
  document.getElementById("waiting-deadline").textContent = waiting.deadline;
  document.getElementById("waiting-on-deadline").textContent = `onDeadline: ${waiting.on_deadline}`;
  document.getElementById("answer-fields").replaceChildren(...waiting.fields.map(answerField));
}

document.getElementById("answer-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const inputs = [...event.target.querySelectorAll("[name]")];
  const values = Object.fromEntries(inputs.filter((i) => i.value !== i.dataset.initial)
    .map((i) => [i.name, typed(i)]));
  const reply = await fetch(`/api/conductor/${CONVERSATION}/answer`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ values }),
  });
  const body = await reply.json();
  document.getElementById("answer-error").textContent = reply.ok ? "" : `${body.field}: ${body.reason}`;
});

function changeRow(c) {
  const when = c.step === null ? "console" : `#${c.step}`;
  return el("tr", {}, el("td", {}, when), el("td", {}, c.who), el("td", {}, el("code", {}, c.field)),
    el("td", { class: "muted" }, c.before), el("td", {}, c.after));
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
  document.getElementById("memory-changes").replaceChildren(
    el("tr", {}, ...["when", "who", "field", "before", "after"].map((h) => el("th", {}, h))),
    ...state.memory_changes.map(changeRow));
  drawWaiting(state.waiting);
}

document.getElementById("cancel").addEventListener("click", () =>
  fetch(`/api/conductor/${CONVERSATION}/cancel`, { method: "POST" }));
new EventSource(`/api/conductor/${CONVERSATION}/events`)
  .addEventListener("state", (event) => draw(JSON.parse(event.data)));
