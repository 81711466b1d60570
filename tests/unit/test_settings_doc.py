"""docs/SETTINGS.md lists every ``DLAB_`` environment variable the code reads, and no other.

The names are collected from the settings classes (each field's variable) and from the string
literals of functions/, shared/, emulator/ and tools/ (the runtime's, the benchmark's and the
tools' options are read there by name). A setting added without a line in the table, or a
line left behind after its setting was removed, fails here."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

from pydantic_settings import BaseSettings

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "SETTINGS.md"
READ_BY_CODE = ("functions", "shared", "emulator", "tools")
ALSO_READ = ("bench", "tests")
"""Options of the benchmark and the tests may be documented too (they are not required)."""
NAME = re.compile(r"DLAB_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_])")
"""A whole variable name: a prefix such as ``DLAB_CHAOS_`` ends with ``_`` and is not one."""
DEFINES_SETTINGS = re.compile(r"^class \w+\((BaseSettings|DlabSettings)\)", re.MULTILINE)


def _files(*folders: str) -> Iterator[Path]:
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _literal_names(*folders: str) -> set[str]:
    names: set[str] = set()
    for path in _files(*folders):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.update(NAME.findall(node.value))
    return names


def _variable(cls: type[BaseSettings], field: str) -> str:
    alias = cls.model_fields[field].validation_alias
    if isinstance(alias, str):
        return alias.upper()
    return f"{cls.model_config.get('env_prefix', '')}{field}".upper()


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _settings_names() -> set[str]:
    """Every field's variable of every settings class defined under READ_BY_CODE."""
    for path in _files(*READ_BY_CODE):
        if DEFINES_SETTINGS.search(path.read_text(encoding="utf-8")):
            importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
    packages = tuple(f"{folder}." for folder in READ_BY_CODE)
    return {
        _variable(cls, field)
        for cls in _subclasses(BaseSettings)
        if cls.__module__.startswith(packages)
        for field in cls.model_fields
    }


def _documented() -> set[str]:
    return set(NAME.findall(DOC.read_text(encoding="utf-8")))


def test_every_setting_is_documented() -> None:
    used = _settings_names() | _literal_names(*READ_BY_CODE)
    missing = sorted(used - _documented())
    assert not missing, f"add these to docs/SETTINGS.md: {missing}"


def test_the_doc_lists_no_setting_that_is_gone() -> None:
    exists = _settings_names() | _literal_names(*READ_BY_CODE, *ALSO_READ)
    gone = sorted(_documented() - exists)
    assert not gone, f"docs/SETTINGS.md lists settings nothing reads: {gone}"


def test_a_settings_field_is_read_from_its_documented_variable() -> None:
    """The collection above sees fields, not just literals: a field without any literal of its
    name (the variable comes from the field's name) is still found."""
    assert "DLAB_WORK_MAX_ATTEMPTS" in _settings_names()
