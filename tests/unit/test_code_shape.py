"""The shape the code keeps: imports run one way and no function grows past a complexity that a
reader can hold. Each test names the offending modules or functions when it fails."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from radon.complexity import cc_visit

REPO_ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = REPO_ROOT / "functions"
MAX_COMPLEXITY = 15
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"main", "_entry", "_http_entry", "triggers", "api"}),
    frozenset({"chat", "society", "debate"}),
    frozenset({"conductor"}),
    frozenset({"agents"}),
)
"""Top to bottom; a part may import its own layer's parts and those below. Every other
top-level module of ``functions/`` is infrastructure, the bottom layer (store, pubsub,
transactions, errors, rooms, wire, ...)."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[str]:
    """Every functions.* module the file imports, at the top or inside a function."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("functions."))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("functions"):
            module = node.module or ""
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                yield candidate if _exists(candidate) else module


def _exists(module: str) -> bool:
    base = REPO_ROOT.joinpath(*module.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(FUNCTIONS.rglob("*.py")):
        name = _module_name(path)
        graph[name] = {m for m in _imports(path) if m != name and m != "functions"}
    return graph


def _part(module: str) -> str:
    """``functions.chat.turn`` -> ``chat``; a top-level module is its own part."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(part: str) -> int:
    return next((i for i, parts in enumerate(LAYERS) if part in parts), len(LAYERS))


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_between_files() -> None:
    assert _cycle(_graph()) is None


def test_no_import_cycle_between_packages() -> None:
    packages: dict[str, set[str]] = {}
    for module, imported in _graph().items():
        if not _part(module) or "." not in module[len("functions.") :]:
            continue  # top-level modules are checked as files
        packages.setdefault(_part(module), set()).update(
            _part(m) for m in imported if _part(m) != _part(module) and _is_package(m)
        )
    assert _cycle(packages) is None


def _is_package(module: str) -> bool:
    return (FUNCTIONS / _part(module)).is_dir()


def test_imports_run_down_the_layers() -> None:
    upward = [
        f"{module} imports {m}"
        for module, imported in _graph().items()
        for m in imported
        if _layer(_part(m)) < _layer(_part(module))
    ]
    assert not upward, "\n".join(upward)


def _production_files() -> Iterator[Path]:
    for folder in ("functions", "shared", "emulator", "tools", "console"):
        yield from sorted((REPO_ROOT / folder).rglob("*.py"))


def test_no_production_function_above_the_complexity_limit() -> None:
    too_complex = [
        f"{path.relative_to(REPO_ROOT)}:{block.lineno} {block.fullname} ({block.complexity})"
        for path in _production_files()
        for block in cc_visit(path.read_text())
        if block.complexity > MAX_COMPLEXITY
    ]
    assert not too_complex, "\n".join(too_complex)


@pytest.mark.parametrize(
    ("source", "complexity"),
    [("def f(x):\n    return x\n", 1), ("def f(x):\n    if x and x > 1:\n        return 1\n", 3)],
)
def test_the_complexity_measure_counts_branches(source: str, complexity: int) -> None:
    assert max(b.complexity for b in cc_visit(source)) == complexity


ELECTION_MODULE = FUNCTIONS / "chat" / "election.py"
"""The one module that reads a stage's election policy (``policy_for``) and knows its names."""


def _policy_names() -> frozenset[str]:
    from typing import get_args

    from shared.models import ChatStage

    return frozenset(get_args(ChatStage.model_fields["election_policy"].annotation)) | {
        "turn-based",
        "turn_based",
    }


def _policy_choices(source: str, names: frozenset[str]) -> Iterator[int]:
    """Lines that compare a policy name (``== "race"``, ``in ("claim", ...)``) or read the
    ``election_policy`` setting: what only ``election.policy_for`` may do."""

    def names_a_policy(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(names_a_policy(e) for e in node.elts)
        return False

    def chooses(node: ast.AST) -> bool:
        if isinstance(node, ast.Compare):
            return any(names_a_policy(n) for n in (node.left, *node.comparators))
        if isinstance(node, ast.MatchValue):
            return names_a_policy(node.value)
        return isinstance(node, ast.Attribute) and node.attr == "election_policy"

    lines = {node.lineno for node in ast.walk(ast.parse(source)) if chooses(node)}
    yield from sorted(lines)


@pytest.mark.parametrize(
    "source",
    [
        'if stage.policy == "claim":\n    pass\n',
        'ok = kind in ("race", "x")\n',
        "p = stage.election_policy\n",
    ],
)
def test_the_policy_check_finds_a_policy_chosen_by_name(source: str) -> None:
    assert list(_policy_choices(source, _policy_names())) == [1]


def test_no_election_policy_is_chosen_outside_the_election_module() -> None:
    names = _policy_names()
    assert {"race", "claim", "conductor"} <= names
    chosen = [
        f"{path.relative_to(REPO_ROOT)}:{line}"
        for path in sorted(FUNCTIONS.rglob("*.py"))
        if path != ELECTION_MODULE
        for line in _policy_choices(path.read_text(), names)
    ]
    assert not chosen, "ask election.policy_for(stage) instead:\n" + "\n".join(chosen)


LOCAL_SIGNALS = {
    "functions.agents.moves.Stale": "a move found the participant changed: retried in place",
    "shared.society.rules.Rejected": "an action the rules refuse: written as an event",
    "shared.prompts.templating._UndefinedVariable": "Jinja's own undefined-variable signal",
}
"""Exceptions that never leave the module that catches them, so need no retry meaning."""
BUILTIN_BASES = {"Exception", "ValueError", "RuntimeError", "UndefinedError", "KeyError"}


def _exception_classes(roots: tuple[Path, ...]) -> dict[str, list[str]]:
    """Every class in ``roots`` whose bases are (transitively, by name) exceptions: its
    dotted name and its bases' names."""
    classes: dict[str, list[str]] = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ClassDef):
                    bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
                    classes[f"{_module_name(path)}.{node.name}"] = bases
    exceptions = _descendants(BUILTIN_BASES, classes)
    return {n: b for n, b in classes.items() if exceptions & set(b)}


def _descendants(roots: set[str], classes: dict[str, list[str]]) -> set[str]:
    """``roots`` and the short names of every class that derives from one, transitively."""
    found = set(roots)
    while True:
        more = {n.rsplit(".", 1)[-1] for n, b in classes.items() if found & set(b)}
        if more <= found:
            return found
        found |= more


def test_every_error_says_what_a_retry_would_do() -> None:
    """One hierarchy: an error class derives from ``shared.errors.BackendError`` (through a
    kind: platform, work, user code, bad input, pause), or is a signal its module catches."""
    found = _exception_classes((FUNCTIONS, REPO_ROOT / "shared"))
    kinds = {"BackendError", "PlatformError", "WorkError", "UserCodeError", "BadInput", "Pause"}
    ours = _descendants(kinds, found)
    outside = sorted(
        n for n in found if n.rsplit(".", 1)[-1] not in ours and n not in LOCAL_SIGNALS
    )
    assert "functions.agents.model_call.AnswerFailed" in found  # the scan sees exceptions
    assert outside == [], f"exceptions without a kind (derive from shared.errors): {outside}"


def _partial_writes(roots: tuple[Path, ...]) -> Iterator[tuple[str, str, list[str]]]:
    """Every ``Model.fields(name=...)`` call: where, the model's name, the field names."""
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                func = node.func if isinstance(node, ast.Call) else None
                if isinstance(func, ast.Attribute) and func.attr == "fields":
                    names = [k.arg for k in node.keywords if k.arg is not None]  # type: ignore[union-attr]
                    where = f"{path.relative_to(REPO_ROOT)}:{node.lineno}"
                    yield where, ast.unparse(func.value), names


def test_every_partial_write_names_fields_its_model_has() -> None:
    """A typed partial update (``DocModel.fields``) names its model's own fields: checked here,
    for every call in the code, rather than by a KeyError on the path that first runs it."""
    import importlib

    from shared.models import DocModel

    models: dict[str, type[DocModel]] = {}
    for module in (
        "shared.models",
        "shared.society.models",
        "shared.debate.models",
        "shared.conductor.documents",
        "functions.leases",
        "functions.chat.messages",
    ):
        for name, value in vars(importlib.import_module(module)).items():
            if isinstance(value, type) and issubclass(value, DocModel):
                models[name] = value
    checked, wrong = 0, []
    for where, model, names in _partial_writes((FUNCTIONS, REPO_ROOT / "shared")):
        cls = models.get(model.rsplit(".", 1)[-1])
        if cls is None:
            continue
        checked += 1
        wrong += [f"{where}: {model} has no field {n}" for n in names if n not in cls.model_fields]
    assert checked >= 5  # the scan finds the calls
    assert wrong == []


DOMAIN = ("agents", "chat", "conductor", "debate", "society")
"""The packages of ``functions/`` above the infrastructure: they ask for their documents by
name (``store``, ``transactions``, a system's documents module) and never import the client."""
CLIENT = ("google.cloud.firestore", "google.cloud.firestore_v1")
_REWRITTEN = "(being rewritten by another change)"
ON_THE_CLIENT: dict[str, str] = {
    "functions/agents/cohort_lock.py": _REWRITTEN,
    "functions/agents/moves.py": _REWRITTEN,
    "functions/agents/persona_bank.py": _REWRITTEN,
    "functions/agents/progression.py": _REWRITTEN,
    "functions/agents/spawn.py": _REWRITTEN,
    "functions/chat/active.py": _REWRITTEN,
    "functions/chat/agents.py": _REWRITTEN,
    "functions/chat/messages.py": _REWRITTEN,
    "functions/chat/readiness.py": _REWRITTEN,
    "functions/chat/sweep.py": _REWRITTEN,
    "functions/chat/turn_order.py": _REWRITTEN,
    "functions/chat/watchdog.py": _REWRITTEN,
    "functions/society/scene.py": "the society's one module on Firestore: every read and write"
    " of a step, one call each (tests/unit/test_society_shape.py)",
}
"""Domain modules that still import the client, each with why. The list only shrinks: the
Transaction type, the sentinels (``increment``, ``DELETE_FIELD``, ...) and ``find`` for a
query are in ``functions/store.py``; a query is a named read of the system's documents."""


def _imports_the_client(source: str) -> bool:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        if any(n == c or n.startswith(f"{c}.") for n in names for c in CLIENT):
            return True
    return False


@pytest.mark.parametrize(
    ("source", "imports"),
    [
        ("from google.cloud import firestore\n", True),
        ("import google.cloud.firestore\n", True),
        ("from google.cloud.firestore_v1.base_query import FieldFilter\n", True),
        ("def f():\n    from google.cloud.firestore import Increment\n", True),
        ("from google.cloud import pubsub_v1\n", False),
        ("from google.api_core import exceptions\n", False),
        ("from functions import store\n", False),
    ],
)
def test_the_client_check_finds_an_import_of_the_client(source: str, imports: bool) -> None:
    assert _imports_the_client(source) is imports


def test_no_domain_module_imports_the_firestore_client() -> None:
    modules = [p for part in DOMAIN for p in sorted((FUNCTIONS / part).rglob("*.py"))]
    assert len(modules) >= 50  # the scan finds the packages
    on_client = {
        str(p.relative_to(REPO_ROOT)) for p in modules if _imports_the_client(p.read_text())
    }
    assert _imports_the_client((FUNCTIONS / "store.py").read_text())  # the infrastructure does
    new = sorted(on_client - ON_THE_CLIENT.keys())
    assert not new, "ask functions/store.py or the system's documents module instead:\n" + (
        "\n".join(new)
    )
    gone = sorted(ON_THE_CLIENT.keys() - on_client)
    assert not gone, "no longer on the client: remove from ON_THE_CLIENT:\n" + "\n".join(gone)


WITHOUT_THE_HANDLE = ("conductor", "debate")
"""Domain packages that no longer call the client handle (``store.db()``, ``clients.db()``):
a batch, a precondition, several documents at once are ``store``'s. Add a package once it is."""


def _calls_the_handle(source: str) -> list[int]:
    """Lines that call ``db()`` (``store.db()``, ``clients.db()``, ``db()``)."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "db")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "db")
        )
    )


def test_the_handle_check_finds_a_call_of_the_client_handle() -> None:
    assert _calls_the_handle("x = 1\nb = store.db().batch()\n") == [2]
    assert _calls_the_handle("from functions.clients import db\nq = db().collection('c')\n") == [2]
    assert _calls_the_handle("b = store.batch()\n") == []


def test_packages_done_with_the_client_handle_do_not_call_it() -> None:
    modules = [p for part in WITHOUT_THE_HANDLE for p in sorted((FUNCTIONS / part).rglob("*.py"))]
    assert len(modules) >= 20  # the scan finds the packages
    calls = [
        f"{path.relative_to(REPO_ROOT)}:{line}"
        for path in modules
        for line in _calls_the_handle(path.read_text())
    ]
    assert not calls, "ask functions/store.py (batch, unchanged_since, snapshots, find):\n" + (
        "\n".join(calls)
    )
