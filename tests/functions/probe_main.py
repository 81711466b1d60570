"""Entry points of the probe functions, built like functions/main.py builds the real ones."""

from __future__ import annotations

import os
import sys

# functions-framework loads this file by path: make the repository root and this folder importable.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [p for p in (os.path.dirname(os.path.dirname(_HERE)), _HERE) if p not in sys.path]

import functions_framework  # noqa: E402
import probe  # noqa: E402

from functions._entry import cloud_event_function  # noqa: E402

for _spec in probe.PROBE_REGISTRY:
    globals()[_spec.name] = cloud_event_function(_spec)


@functions_framework.cloud_event
def probeRaw(cloud_event: object) -> None:
    probe.on_raw(cloud_event)
