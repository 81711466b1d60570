"""The two security rulesets: ``default`` (firestore.rules) and ``strict`` (firestore.strict.rules).

The strict ruleset is the default one with its ``strict()`` function returning true (it denies
the reads Deliberate Lab's web app makes without signing in; docs/SECURITY.md). One source, so
the two cannot drift: edit firestore.rules, then ``python -m tools.deploy.rulesets`` rewrites
firestore.strict.rules (tests/unit/test_deploy.py fails while they disagree).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal, get_args

from tools.deploy.source import REPO_ROOT

Ruleset = Literal["default", "strict"]
NAMES: tuple[Ruleset, ...] = get_args(Ruleset)
FILES: dict[Ruleset, Path] = {
    "default": REPO_ROOT / "firestore.rules",
    "strict": REPO_ROOT / "firestore.strict.rules",
}
SWITCH = "function strict() {\n      return false;\n    }"
GENERATED = (
    "// GENERATED from firestore.rules by python -m tools.deploy.rulesets (strict() returns "
    "true): edit that file, not this one.\n"
)


class RulesetError(ValueError):
    """The default rules lost their ``strict()`` switch: no strict ruleset can be made."""


def path(name: Ruleset) -> Path:
    return FILES[name]


def strict_source(default: str) -> str:
    """The strict ruleset made from the default one's source."""
    if default.count(SWITCH) != 1:
        raise RulesetError(f"firestore.rules must define exactly one {SWITCH!r}")
    first, rest = default.split("\n", 1)
    body = rest.replace(SWITCH, SWITCH.replace("false", "true"))
    return f"{first}\n\n{GENERATED}{body}"


def write_strict() -> Path:
    target = FILES["strict"]
    target.write_text(strict_source(FILES["default"].read_text()))
    return target


def main() -> int:
    print(f"wrote {write_strict()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
