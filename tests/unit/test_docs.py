"""The README is the front door, short; every page it and docs/ link to exists, and every
anchor they link to is a heading there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", page.read_text())
    return {_slug(m.group(1)) for m in re.finditer(r"(?m)^#{1,6} (.*)$", text)}


def _links(page: Path) -> list[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", page.read_text())
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z]+:", t)]


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_leads_somewhere(page: Path):
    broken = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading '{anchor}' in {linked.name}")
    assert not broken, broken
