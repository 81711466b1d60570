"""Publishing firestore.rules with the Firebase Rules REST API, without clobbering a project's.

gcloud has no command for Firestore security rules (the Firebase CLI does, but it is not
required). The API takes two calls, as the Firebase CLI makes them: create a ruleset from the
source, then point the database's release (``cloud.firestore``) at it.

A release replaces the project's whole ruleset, and a project may run other apps (Deliberate
Lab's web app) whose rules ours would lock out. So the deploy first reads the rules in force,
prints the diff, and by default replaces only rules this tool wrote, after asking
(``--rules=ask``); ``merge`` adds their blocks for other collections to ours, ``replace``
releases ours as they are, ``skip`` leaves the project's rules alone.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable
from typing import get_args

from tools.deploy import googleapis, rules_merge
from tools.deploy.plan import ReleaseRules, RulesMode

API = "firebaserules"
MODES: tuple[RulesMode, ...] = get_args(RulesMode)
Confirm = Callable[[str], bool]
Print = Callable[[str], None]


class RulesRefused(RuntimeError):
    """The deploy stops: the project's rules need a decision (``--rules=...``)."""


def ask_terminal(question: str) -> bool:
    """Yes only when someone at a terminal says so."""
    if not sys.stdin.isatty():
        return False
    return input(question).strip().lower() in ("y", "yes")


def deploy(step: ReleaseRules, out: Print = print, confirm: Confirm = ask_terminal) -> str:
    """Decide (diff, mode, question) and release; what happened, for the deploy output."""
    ours = step.rules.read_text()
    source = choose(step, current_source(step), ours, out, confirm)
    return "left as they are" if source is None else f"released {release(step, source=source)}"


def current_source(step: ReleaseRules, token: str | None = None) -> str | None:
    """The rules in force for the database, or None when nothing was ever released."""
    name = f"projects/{step.project}/releases/{step.release_id}"
    try:
        current = googleapis.call(API, "GET", name, None, step.project, token)
    except googleapis.ApiError as error:
        if "HTTP 404" in str(error):
            return None
        raise
    ruleset = googleapis.call(API, "GET", current["rulesetName"], None, step.project, token)
    return "\n".join(f.get("content", "") for f in ruleset.get("source", {}).get("files", []))


def choose(
    step: ReleaseRules, current: str | None, ours: str, out: Print, confirm: Confirm
) -> str | None:
    """The source to release, or None to leave the project's rules as they are."""
    if current is None:
        return ours
    if current == ours:
        out("  rules unchanged")
        return None
    if step.mode == "skip":
        out("  --rules=skip: the project's rules stay as they are")
        return None
    target = ours
    if step.mode == "merge":
        target, added = rules_merge.merge(ours, current)
        out(f"  --rules=merge: kept from the project's rules: {', '.join(added) or 'nothing'}")
    out(diff(current, target))
    if step.mode != "ask":
        return target
    if not rules_merge.written_by_us(current):
        raise RulesRefused(
            "the project's security rules were not written by this tool (diff above); "
            "releasing ours would replace them. Run again with --rules=merge (ours plus their "
            "blocks for collections ours does not cover), --rules=replace (ours only) or "
            "--rules=skip (theirs stay; see docs/DEPLOY.md)"
        )
    if confirm("Replace the project's rules with these (diff above)? [y/N] "):
        return ours
    out("  not confirmed (or no terminal; --rules=replace to release without asking)")
    return None


def diff(current: str, target: str) -> str:
    lines = difflib.unified_diff(
        current.splitlines(), target.splitlines(), "project's rules", "to release", lineterm=""
    )
    return "\n".join(lines)


def release(step: ReleaseRules, token: str | None = None, source: str | None = None) -> str:
    """Create the ruleset and release it; returns the ruleset name. A compile error in the rules
    is reported by the first call and nothing is released."""
    project = step.project
    content = step.rules.read_text() if source is None else source
    files = {"files": [{"name": "firestore.rules", "content": content}]}
    ruleset = googleapis.call(
        API, "POST", f"projects/{project}/rulesets", {"source": files}, project, token
    )
    name = ruleset["name"]
    release_name = f"projects/{project}/releases/{step.release_id}"
    body = {"name": release_name, "rulesetName": name}
    try:
        googleapis.call(API, "PATCH", release_name, {"release": body}, project, token)
    except googleapis.ApiError as error:
        if "HTTP 404" not in str(error):
            raise
        googleapis.call(API, "POST", f"projects/{project}/releases", body, project, token)
    return name
