// Create, save and delete documents through the console's JSON API; the server validates each
// write against our models and answers 422 with {document, field, reason}, shown here.
function showError(form, problem) {
  const box = form.querySelector(".error");
  box.textContent = problem ? `${problem.field}: ${problem.reason}\n(${problem.document})` : "";
  box.hidden = !problem;
}

async function write(form, method, url, text) {
  let body;
  try {
    body = JSON.stringify(JSON.parse(text));
  } catch (error) {
    showError(form, { document: url, field: "(document)", reason: `not valid JSON: ${error.message}` });
    return null;
  }
  const response = await fetch(url, { method, body, headers: { "Content-Type": "application/json" } });
  const answer = await response.json();
  if (!response.ok) {
    showError(form, answer);
    return null;
  }
  showError(form, null);
  return answer;
}

const edit = document.getElementById("edit");
if (edit) {
  const api = `/api/docs/${edit.dataset.path}`;
  edit.addEventListener("submit", async (event) => {
    event.preventDefault();
    const done = await write(edit, "PUT", api, edit.json.value);
    const saved = edit.querySelector(".saved");
    saved.hidden = !done;
  });
  const remove = document.getElementById("delete");
  if (remove) {
    remove.addEventListener("click", async () => {
      if (!confirm(`Delete ${edit.dataset.path}?`)) return;
      await fetch(api, { method: "DELETE" });
      location.href = `/docs/${edit.dataset.path.split("/").slice(0, -1).join("/")}`;
    });
  }
}

const create = document.getElementById("create");
if (create) {
  create.addEventListener("submit", async (event) => {
    event.preventDefault();
    const id = create.id.value.trim();
    const collection = create.dataset.collection;
    const done = id
      ? await write(create, "PUT", `/api/docs/${collection}/${id}`, create.json.value)
      : await write(create, "POST", `/api/docs/${collection}`, create.json.value);
    if (done) location.href = `/docs/${done.written}`;
  });
}
