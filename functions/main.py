"""Cloud Functions entry points, one per registry entry (``--target`` is the registry name).

Making the entry points imports no handler: each handler's module is imported at its first
call, except the deployed target's (``FUNCTION_TARGET``, which functions-framework sets before
it loads this file), imported here, while the instance starts. So a deployed function imports
only its own trigger family, and a model provider's SDK only when its run calls that provider
(``shared.llm.providers``); ``tests/unit/test_entry_imports.py`` checks both.
"""

from __future__ import annotations

import os
import sys

# functions-framework loads this file by path; make the repository root importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from functions._entry import cloud_event_function, preload
from functions._http_entry import http_function
from functions.registry import REGISTRY, HttpTrigger

for _spec in REGISTRY:
    _make = http_function if isinstance(_spec.trigger, HttpTrigger) else cloud_event_function
    globals()[_spec.name] = _make(_spec)

preload(os.environ.get("FUNCTION_TARGET", ""))
