"""The society's shape: one module speaks to Firestore (``functions/society/scene.py``: what each
step reads and writes); the steps decide and the pure rules compute, neither touching the
client nor the read layer."""

from __future__ import annotations

import ast
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SOCIETY = REPO_ROOT / "functions" / "society"
THE_DOOR = "scene.py"
CLIENT: tuple[str, ...] = ("google.cloud", "google.api_core", "functions.store")
CLIENT += ("functions.reads", "functions.transactions", "functions.documents")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found


def _speaks_to_firestore(path: Path) -> list[str]:
    return sorted(m for m in _imports(path) if m.startswith(CLIENT))


def test_only_the_scene_module_speaks_to_firestore() -> None:
    modules = sorted(SOCIETY.glob("*.py"))
    assert len(modules) >= 8  # the scan finds the package
    offending = {
        p.name: found for p in modules if p.name != THE_DOOR and (found := _speaks_to_firestore(p))
    }
    assert offending == {}
    assert _speaks_to_firestore(SOCIETY / THE_DOOR)  # the door is where the client is


def test_the_society_rules_are_pure() -> None:
    """``shared/society`` imports nothing of ``functions`` nor the client."""
    impure = {
        p.name: sorted(m for m in _imports(p) if m.startswith(("functions", *CLIENT)))
        for p in sorted((REPO_ROOT / "shared" / "society").glob("*.py"))
    }
    assert {name: found for name, found in impure.items() if found} == {}


def test_the_close_reads_top_to_bottom_in_five_files_and_its_trigger() -> None:
    """What the close (``functions.society.close``) imports of the society, all the way down:
    its scene (reads and writes), the rules of a shard's phase and of the society-level steps
    (pure), and the action documents' identity. Documents (``models``, the prompts document),
    paths, messages and settings are vocabulary, not steps; the next day opens in ``days``
    through the ``then`` its caller gives."""
    vocabulary = {"models", "paths", "wire", "settings", "actions", "prompts"}
    seen: set[str] = set()
    todo = ["functions.society.close"]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = REPO_ROOT.joinpath(*module.split(".")).with_suffix(".py")
        for imported in _imports(path):
            if not imported.startswith(("functions.society.", "shared.society.")):
                continue
            if _is_module(imported) and imported.rsplit(".", 1)[1] not in vocabulary:
                todo.append(imported)
    assert seen == {
        "functions.society.close",
        "functions.society.scene",
        "shared.society.rules",
        "shared.society.close_rules",
        "shared.society.identity",
    }


def _is_module(name: str) -> bool:
    return REPO_ROOT.joinpath(*name.split(".")).with_suffix(".py").exists()
