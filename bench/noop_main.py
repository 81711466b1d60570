"""Entry point of the no-op function, built like functions/main.py builds the real ones."""

from __future__ import annotations

import os
import sys

# functions-framework loads this file by path: make the repository root importable.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from bench import noop  # noqa: E402
from functions._entry import cloud_event_function  # noqa: E402

for _spec in noop.REGISTRY:
    globals()[_spec.name] = cloud_event_function(_spec)
