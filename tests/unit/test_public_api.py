"""Deployed code (``functions/``, ``shared/``) uses only public library APIs: it imports no
private module or name of a third-party library, reaches no private attribute that
google-cloud-firestore or google-api-core define, and assigns no attribute of a third-party
module or of anything imported from one (a monkeypatch of the library for the whole process).
A client release may change anything private; these tests name the file, line and name."""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOYED = ("functions", "shared")
OWN = frozenset({"functions", "shared"})
WATCHED_LIBRARIES = (
    "google/cloud/firestore_v1",
    "google/cloud/firestore",
    "google/api_core",
    "proto",  # proto-plus, whose messages the GAPIC client hands out
)
"""Libraries whose private attribute names are looked for in attribute accesses (the
Firestore client's objects reach deployed code as values, not imports)."""


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _third_party(module: str | None) -> bool:
    top = (module or "").split(".")[0]
    return bool(top) and top not in OWN and top not in sys.stdlib_module_names


def deployed_files(root: Path) -> list[Path]:
    return sorted(p for part in DEPLOYED for p in (root / part).rglob("*.py"))


def _imports(tree: ast.AST) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, imported name or None) of every import."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield node.lineno, node.module, alias.name


def private_imports(path: Path, tree: ast.AST) -> list[str]:
    found = []
    for line, module, name in _imports(tree):
        if not _third_party(module):
            continue
        parts = [*module.split("."), *([name] if name else [])]
        if any(_private(part) for part in parts):
            found.append(f"{path}:{line}: {'.'.join(parts)}")
    return found


def _third_party_names(tree: ast.AST) -> set[str]:
    """Names bound in the module to a third-party module or to something imported from one."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _third_party(alias.name):
                    bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _third_party(node.module):
            bound.update(alias.asname or alias.name for alias in node.names)
    return bound


def _own_module_names(tree: ast.AST) -> set[str]:
    """Names bound to deployed code's own modules (``store._get`` is no library's)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update(
                a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in OWN
            )
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in OWN:
            bound.update(alias.asname or alias.name for alias in node.names)
    return bound


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _assigned(tree: ast.AST) -> Iterator[tuple[int, ast.expr]]:
    """Every attribute assignment or deletion target, and every ``setattr``/``delattr``'s
    first argument."""
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and node.args
        ):
            yield node.lineno, node.args[0]
        for target in targets:
            if isinstance(target, ast.Attribute):
                yield node.lineno, target.value


def patches(path: Path, tree: ast.AST) -> list[str]:
    """Assignments to attributes of a third-party module or of what was imported from one."""
    imported = _third_party_names(tree)
    return [
        f"{path}:{line}: {ast.unparse(owner)}"
        for line, owner in _assigned(tree)
        if _root(owner) in imported
    ]


@functools.cache
def library_private_names() -> frozenset[str]:
    """Private names the watched libraries define (functions, classes, attributes)."""
    names: set[str] = set()
    for path in dict.fromkeys(sys.path):
        for library in WATCHED_LIBRARIES:
            for source in (Path(path) / library).glob("**/*.py"):
                for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
                    if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                        names.add(node.name)
                    elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                        names.add(node.attr)
                    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        names.add(node.id)
    return frozenset(n for n in names if _private(n))


def _own(node: ast.Attribute, own_modules: set[str]) -> bool:
    """``self._x``, ``cls._x``, or an attribute of one of deployed code's own modules."""
    value = node.value
    if isinstance(value, ast.Name) and value.id in ("self", "cls"):
        return True
    return _root(node) in own_modules


def private_attributes(path: Path, tree: ast.AST, theirs: frozenset[str]) -> list[str]:
    """``x._name`` and ``getattr(x, "_name")`` for a private name the libraries define, on
    anything but ``self``/``cls`` and deployed code's own modules."""
    own = _own_module_names(tree)
    found = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Attribute) and not _own(node, own):
            name = node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
        ):
            name = str(node.args[1].value)
        if name is not None and name in theirs:
            found.append(f"{path}:{node.lineno}: {name}")
    return found


def check(root: Path) -> dict[str, list[str]]:
    """Every finding under ``root``'s deployed code, by kind."""
    files = deployed_files(root)
    theirs = library_private_names()
    out: dict[str, list[str]] = {"imports": [], "patches": [], "attributes": []}
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        shown = path.relative_to(root)
        out["imports"] += private_imports(shown, tree)
        out["patches"] += patches(shown, tree)
        out["attributes"] += private_attributes(shown, tree, theirs)
    return out


@pytest.fixture(scope="module")
def findings() -> dict[str, list[str]]:
    return check(REPO_ROOT)


def test_no_private_module_or_name_of_a_library_is_imported(findings):
    assert findings["imports"] == []


def test_no_attribute_of_a_library_is_assigned(findings):
    assert findings["patches"] == []


def test_no_private_attribute_of_the_firestore_client_is_reached(findings):
    assert findings["attributes"] == []


def _findings_of(source: str, tmp_path: Path) -> dict[str, list[str]]:
    (tmp_path / "functions").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "functions" / "m.py").write_text(source, encoding="utf-8")
    return check(tmp_path)


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("from google.cloud.firestore_v1 import _helpers\n", "imports"),
        ("from google.cloud.firestore_v1._helpers import encode_value\n", "imports"),
        (
            "import google.api_core.gapic_v1.method as m\nm._GapicCallable.__call__ = len\n",
            "patches",
        ),
        ("from google.cloud.firestore_v1 import base_client\nbase_client.f = len\n", "patches"),
        ("from google.cloud import firestore\nsetattr(firestore, 'Client', None)\n", "patches"),
        ("def f(client):\n    return client._firestore_api\n", "attributes"),
        ("def f(snap):\n    return getattr(snap, '_data', None)\n", "attributes"),
    ],
)
def test_each_kind_is_caught(source, kind, tmp_path):
    """The checks catch what they say (and the code this replaced: fast_read's patches,
    transactions' ``client._prep_get_all``, store's ``snap._data``)."""
    assert _findings_of(source, tmp_path)[kind] != []


def test_own_names_and_public_uses_pass(tmp_path):
    source = (
        "from google.cloud import firestore\n"
        "from functions import store\n"
        "class A:\n    def __init__(self):\n        self._data = {}\n"
        "store.x = 1\n"
        "def f(snap):\n    return snap.to_dict(), firestore.Increment(1)\n"
    )
    assert _findings_of(source, tmp_path) == {"imports": [], "patches": [], "attributes": []}
