"""What the command-line tools share about their arguments: a bad one is one line on stderr
(``prog: error: why``) and exit code 2, never a traceback; ids, emails and counts are checked
as they are parsed."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import NoReturn

from shared import paths

USAGE = 2
"""The exit code of a bad argument (argparse's)."""


class Parser(argparse.ArgumentParser):
    """argparse, its error on one line (the usage is behind ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: error: {message}\n")


def usage_error(prog: str, message: str) -> int:
    """A bad argument found after parsing: the same one line; the exit code to return."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return USAGE


def document_id(value: str) -> str:
    """An id that can name a Firestore document."""
    problem = paths.id_problem(value)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{value[:80]!r} is not a document id: {problem}")
    return value


_EMAIL = re.compile(r"^[^@\s/]+@[^@\s/]+\.[^@\s/]+$")


def email(value: str) -> str:
    """An email address (its form only), as an experimenter's id is one."""
    if not _EMAIL.fullmatch(value.strip()):
        raise argparse.ArgumentTypeError(f"{value[:80]!r} is not an email address")
    return value.strip()


def bounded(low: int, high: int) -> Callable[[str], int]:
    """A whole number from ``low`` to ``high``: past a bound a number exhausts the machine."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value[:80]!r} is not a whole number") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{number} is not from {low} to {high}")
        return number

    parse.__name__ = "number"  # argparse names the type in its messages
    return parse
