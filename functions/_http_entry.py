"""Entry-point factory for the registry's HTTP functions: a functions-framework HTTP function
that calls the spec's handler with the request, within the function's deadline and name.

Apart from ``_entry`` (CloudEvents): an HTTP caller gets the handler's answer, not a retry, so
there is no delivery to count or acknowledge here.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import flask
import functions_framework

from functions.deadline import running_for
from functions.errors import invoked_as
from functions.registry import FunctionSpec


@functools.cache
def _handler(dotted: str) -> Callable[[flask.Request], Any]:
    module, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module), name)


def http_function(spec: FunctionSpec) -> Callable[[flask.Request], Any]:
    """The entry point; the handler's module is imported at the first request (or by
    ``functions.main`` when this is the deployed target), not when the entry point is made."""

    def entry(request: flask.Request) -> Any:
        with running_for(spec.timeout_s), invoked_as(spec.name):
            return _handler(spec.handler)(request)

    entry.__name__ = entry.__qualname__ = spec.name
    entry.__doc__ = spec.description
    return functions_framework.http(entry)
