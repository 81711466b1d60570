"""Cloud Functions entry points, one per registry entry (``--target`` is the registry name)."""

from __future__ import annotations

import os
import sys

# functions-framework loads this file by path; make the repository root importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from functions._entry import cloud_event_function
from functions._http_entry import http_function
from functions.registry import REGISTRY, HttpTrigger

for _spec in REGISTRY:
    _make = http_function if isinstance(_spec.trigger, HttpTrigger) else cloud_event_function
    globals()[_spec.name] = _make(_spec)
