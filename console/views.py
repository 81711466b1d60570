"""The console's views: one blueprint each, listed in VIEWS (the order of the navigation bar).

Adding a view (docs/CONSOLE.md): write ``console/<name>.py`` with a ``blueprint`` and its
templates in ``console/templates/``, then add a ``View`` here; the app registers it and the
navigation links to it.
"""

from __future__ import annotations

import dataclasses

from flask import Blueprint

from console import conductor, debates, documents, experiments, journal, societies


@dataclasses.dataclass(frozen=True)
class View:
    blueprint: Blueprint
    label: str
    """The navigation bar's link text."""
    endpoint: str
    """The page the link opens (``blueprint.function``); it must take no URL parameters."""


VIEWS: tuple[View, ...] = (
    View(experiments.blueprint, "Experiments", "experiments.index"),
    View(debates.blueprint, "Debates", "debates.index"),
    View(documents.blueprint, "Documents", "documents.browse"),
    View(societies.blueprint, "Societies", "societies.index"),
    View(conductor.blueprint, "Conductor", "conductor.index"),
    View(journal.blueprint, "Journal", "journal.index"),
)
