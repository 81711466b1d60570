"""The console in a real headless browser (Debian's chromium through chromium-driver): the live
view follows agents to SUCCESS, a participant created with the edit form starts moving, and a
malformed edit shows the model's error and writes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.cloud import firestore
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from console.browser import BrowserMissing, headless_chromium
from console.server import ConsoleServer
from emulator.processes import free_port
from tools.load_template import load
from tools.load_workflow import load as load_workflow

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "templates" / "group_decision_locked.json"
WAIT_S = 45


def chrome() -> WebDriver:
    try:
        return headless_chromium()
    except BrowserMissing as error:
        pytest.fail(str(error))


@pytest.fixture
def console(runtime, db) -> Iterator[str]:
    with ConsoleServer(runtime.project, free_port()) as server:
        yield server.url


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    driver = chrome()
    try:
        yield driver
    finally:
        driver.quit()


def _cell(browser: WebDriver, agent_id: str, column: str) -> str:
    cells = browser.find_elements(By.CSS_SELECTOR, f'#agents tr[data-id="{agent_id}"] .{column}')
    return cells[0].text.split("\n")[0] if cells else ""


def _status(browser: WebDriver, agent_id: str) -> str:
    return _cell(browser, agent_id, "status")


def _wait(browser: WebDriver, condition, what: str) -> None:
    """Poll ``condition``; the live view re-renders its rows as events arrive, so an element
    found a moment ago may be gone when read: that is a retry, not a failure."""
    WebDriverWait(
        browser, WAIT_S, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,)
    ).until(lambda _: condition(), what)


def test_live_view_and_edits_in_a_browser(console: str, browser: WebDriver, db: firestore.Client):
    result = load(db, json.loads(TEMPLATE.read_text()), agents=3, api_type="SCRIPTED")
    e = result.experiment_id
    participants = f"experiments/{e}/participants"
    first = sorted(d.id for d in db.collection(participants).list_documents())[0]

    browser.get(f"{console}/")
    browser.find_element(By.CSS_SELECTOR, f'#experiments tr[data-id="{e}"] a.live').click()
    _wait(browser, lambda: _status(browser, first) == "SUCCESS", "an agent at SUCCESS")
    assert browser.find_element(By.ID, "connection").text == "live"

    # a minimal agent participant, through the create form; the backend fills in the rest
    browser.get(f"{console}/docs/{participants}")
    form = browser.find_element(By.ID, "create")
    form.find_element(By.NAME, "id").send_keys("from-the-form")
    minimal = {"agentConfig": {"modelSettings": {"apiType": "SCRIPTED", "modelName": ""}}}
    _replace(form.find_element(By.NAME, "json"), json.dumps(minimal))
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser, lambda: browser.current_url.endswith("/from-the-form"), "the new document")
    browser.get(f"{console}/experiments/{e}/live")
    _wait(browser, lambda: _status(browser, "from-the-form") == "SUCCESS", "the new agent moves")
    _wait(browser, lambda: _cell(browser, "from-the-form", "stage") == "thanks", "its last stage")

    # a malformed edit: the model's error is shown and the document is unchanged
    path = f"{participants}/{first}"
    before = db.document(path).get().to_dict()
    browser.get(f"{console}/docs/{path}")
    edit = browser.find_element(By.ID, "edit")
    text = edit.find_element(By.NAME, "json")
    data = json.loads(text.get_attribute("value"))
    _replace(text, json.dumps({**data, "currentStatus": 5}))
    edit.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    error = edit.find_element(By.CSS_SELECTOR, ".error")
    _wait(browser, error.is_displayed, "the validation error")
    assert error.text.startswith("currentStatus: Input should be") and "got 5" in error.text
    assert db.document(path).get().to_dict() == before


def _replace(textarea, text: str) -> None:
    """Set a textarea's value in one step (typing a long JSON key by key is slow)."""
    driver = textarea.parent
    driver.execute_script("arguments[0].value = arguments[1];", textarea, text)


def test_a_person_answers_a_waiting_step_in_the_conversation_view(
    console: str, browser: WebDriver, db: firestore.Client
):
    """The conversation view shows the human step's question and a form built from its answer
    fields; a refused answer shows why, an accepted one wakes the step and the view follows the
    conversation to DONE, with the steps' memory changes."""
    load_workflow(db, REPO_ROOT / "workflows" / "review", "review")
    db.document("conversations/b1").set(
        {"query": "My firewall drops port 443", "workflowId": "review", "status": "PENDING"}
    )
    browser.get(f"{console}/conductor/b1")
    form = browser.find_element(By.ID, "answer-form")
    _wait(browser, form.is_displayed, "the waiting step's form")
    question = browser.find_element(By.ID, "waiting-question").text
    assert "The drafted answer:" in question
    verdict = form.find_element(By.NAME, "verdict")
    verdict.find_element(By.CSS_SELECTOR, 'option[value="reject"]').click()
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    refusal = browser.find_element(By.ID, "answer-error")
    _wait(browser, lambda: "needs a comment" in refusal.text, "the refusal's reason")
    assert not db.document("conversations/b1/humanAnswers/0005").get().exists
    form.find_element(By.NAME, "comment").send_keys("Name the port range too.")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    status = browser.find_element(By.ID, "status")
    _wait(browser, lambda: status.text == "DONE", "the conversation DONE")
    answer = db.document("conversations/b1/humanAnswers/0005").get().to_dict()
    assert answer["values"] == {"verdict": "reject", "comment": "Name the port range too."}
    assert not browser.find_element(By.ID, "waiting").is_displayed()
    changes = browser.find_element(By.ID, "memory-changes").text
    assert "reviewer (turn 3) verdict" in changes and '"reject"' in changes
