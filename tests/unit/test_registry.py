"""The registry is the single source of truth: entry points and the documented table follow it."""

import re
from pathlib import Path

from functions import main
from functions.registry import REGISTRY, FirestoreTrigger, HttpTrigger, markdown_table
from shared import paths

README = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"


def test_every_registry_entry_has_an_entry_point_and_handler():
    for spec in REGISTRY:
        assert callable(getattr(main, spec.name))
        module, _, name = spec.handler.partition(":")
        assert callable(getattr(__import__(module, fromlist=[name]), name))


def test_names_are_unique_and_patterns_come_from_shared_paths():
    assert len({s.name for s in REGISTRY}) == len(REGISTRY)
    known = {v for k, v in vars(paths).items() if k.isupper()}
    for spec in REGISTRY:
        if isinstance(spec.trigger, FirestoreTrigger):
            assert spec.trigger.document in known


def test_readme_function_table_is_generated_from_the_registry():
    block = re.search(
        r"<!-- function-table:start -->\n(.*?)<!-- function-table:end -->", README.read_text(), re.S
    )
    assert block, "README lacks the function table markers"
    assert block.group(1).strip() == markdown_table().strip(), "run `make table` and paste it"


def test_the_rest_api_is_the_one_public_http_function():
    """The HTTP kind: an HTTP entry point (functions-framework's http signature), the REST API
    open to unauthenticated invocations because its API key is the auth."""
    import functions_framework._function_registry as ff_registry

    http = [s for s in REGISTRY if isinstance(s.trigger, HttpTrigger)]
    assert [(s.name, s.trigger.path, s.trigger.public, s.retry) for s in http] == [
        ("api", "/v1", True, False)
    ]
    assert ff_registry.get_func_signature_type("api", None) == "http"
    assert ff_registry.get_func_signature_type("onAgentTurn", None) == "cloudevent"
    assert "| `api` | HTTP `/v1`, unauthenticated |" in markdown_table()
