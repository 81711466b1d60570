"""Publishing firestore.rules with the Firebase Rules REST API.

gcloud has no command for Firestore security rules (the Firebase CLI does, but it is not
required). The API takes two calls, as the Firebase CLI makes them: create a ruleset from the
source, then point the database's release (``cloud.firestore``) at it.
"""

from __future__ import annotations

from tools.deploy import googleapis
from tools.deploy.plan import ReleaseRules

API = "firebaserules"


def release(step: ReleaseRules, token: str | None = None) -> str:
    """Create the ruleset and release it; returns the ruleset name. A compile error in the rules
    is reported by the first call and nothing is released."""
    project = step.project
    source = {"files": [{"name": "firestore.rules", "content": step.rules.read_text()}]}
    ruleset = googleapis.call(
        API, "POST", f"projects/{project}/rulesets", {"source": source}, project, token
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
