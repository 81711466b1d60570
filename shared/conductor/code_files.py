"""A Diskurs project's Python files (``prompt.py``, ``parallelize.py``, ``rules.py``, tools),
imported by path as Diskurs imports them, once per process.

Diskurs loads each file by its path and registers it in ``sys.modules`` under its bare name
(``prompt``), which is what lets a project's ``parallelize.py`` say ``from prompt import ...``;
we do the same, so such files run unchanged, and also under a name unique to the path, so two
agents' ``prompt.py`` stay two modules. A file is read once per process (the functions import
it at every step; importing is not free and its module-level state must persist), again only
when it changed on disk.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import threading
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
        except BaseException:
            sys.modules.pop(spec.name, None)
            raise
        _LOADED[path] = (stamp, module)
        return module
