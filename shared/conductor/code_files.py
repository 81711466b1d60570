"""A Diskurs project's Python files (``prompt.py``, ``parallelize.py``, ``rules.py``, tools),
imported by path as Diskurs imports them, once per process.

Diskurs loads each file by its path and registers it in ``sys.modules`` under its bare name
(``prompt``), which is what lets a project's ``parallelize.py`` say ``from prompt import ...``;
we do the same, so such files run unchanged, and also under a name unique to the path, so two
agents' ``prompt.py`` stay two modules. A file is read once per process (the functions import
it at every step; importing is not free and its module-level state must persist), again only
when it changed on disk.

A file with ``from __future__ import annotations`` keeps its dataclasses' field types as
strings, which Diskurs' ``validate_dataclass`` would call as converters (every reply refused);
so, once the file has run, each dataclass it defines gets its fields' types resolved by
``typing.get_type_hints``, as Diskurs' own ``PromptArgument`` methods read them. A type that
cannot be resolved is an error naming the class and its line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import inspect
import sys
import threading
import typing
from pathlib import Path
from types import ModuleType

_LOCK = threading.Lock()
_LOADED: dict[Path, tuple[tuple[int, int], ModuleType]] = {}


def unique_name(path: Path) -> str:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
    return f"diskurs_project_{digest}_{path.stem}"


def load_file(path: Path) -> ModuleType:
    """The module of the Python file ``path`` (an ImportError when it is missing); whatever the
    file raises as it runs propagates (the caller decides whether that is user code)."""
    path = path.resolve()
    if not path.is_file():
        raise ImportError(f"no file {path}")
    with _LOCK:
        info = path.stat()
        stamp = (info.st_mtime_ns, info.st_size)
        cached = _LOADED.get(path)
        if cached is not None and cached[0] == stamp:
            sys.modules[path.stem] = cached[1]
            return cached[1]
        spec = importlib.util.spec_from_file_location(unique_name(path), path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        sys.modules[path.stem] = module  # as Diskurs: `from prompt import X` finds it
        try:
            spec.loader.exec_module(module)
            resolve_annotations(module)
        except BaseException:
            sys.modules.pop(spec.name, None)
            raise
        _LOADED[path] = (stamp, module)
        return module


def resolve_annotations(module: ModuleType) -> None:
    """The field types of the module's own dataclasses, resolved where they are strings
    (postponed annotations); a NameError naming the class and its line if one cannot be."""
    for found in list(vars(module).values()):
        if not (
            isinstance(found, type)
            and dataclasses.is_dataclass(found)
            and found.__module__ == module.__name__
        ):
            continue
        fields = dataclasses.fields(found)
        if not any(isinstance(f.type, str) for f in fields):
            continue
        try:
            hints = typing.get_type_hints(found, include_extras=True)
        except NameError as error:
            line = definition_line(found)
            raise NameError(
                f"class {found.__name__} (line {line}): a field's type cannot be resolved: {error}"
            ) from None
        for f in fields:
            if isinstance(f.type, str) and f.name in hints:
                f.type = hints[f.name]


def definition_line(found: object) -> int:
    """The line of a class's or function's ``class`` / ``def`` (past its decorators); 0 when
    its source is not at hand."""
    try:
        lines, start = inspect.getsourcelines(found)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return 0
    keywords = ("class ", "def ", "async def ")
    offset = next((i for i, line in enumerate(lines) if line.lstrip().startswith(keywords)), 0)
    return start + offset
