"""Merging a project's Firestore rules into ours (``--rules=merge``).

Firestore grants a request when any matching ``allow`` grants it, so adding another ruleset's
top-level ``match`` blocks for collections ours does not mention only opens those collections,
as that ruleset did. The merge keeps all of ours, and adds from theirs the top-level blocks of
``match /databases/{database}/documents`` whose first path segment ours does not match (a
wildcard first segment counts as matched: ours has a deny-all catch-all) and the functions ours
does not define (a name both define keeps ours: what the added blocks call must exist).
"""

from __future__ import annotations

import dataclasses
import re

MARKER = "dlab-python-backend-rules"
"""In a comment of our firestore.rules: the deploy tool wrote the rules that carry it."""
_DOCUMENTS = re.compile(r"match\s+/databases/\{\w+\}/documents\s*\{")
_MATCH = re.compile(r"match\s+(/\S*)\s*\{")
_FUNCTION = re.compile(r"function\s+(\w+)\s*\(")


class MergeError(ValueError):
    """A ruleset this module cannot take apart (no documents block, unbalanced braces)."""


@dataclasses.dataclass(frozen=True)
class Block:
    text: str
    kind: str
    """"match" or "function"."""
    name: str
    """The match's first path segment ('' for a wildcard), or the function's name."""


def written_by_us(source: str) -> bool:
    return MARKER in source


def merge(ours: str, theirs: str) -> tuple[str, list[str]]:
    """Our rules with their blocks added; and what was added, for the deploy output."""
    our_start, our_end = documents_body(ours)
    their_start, their_end = documents_body(theirs)
    our_blocks = blocks(ours[our_start:our_end])
    covered = {b.name for b in our_blocks if b.kind == "match"} | {""}
    defined = {b.name for b in our_blocks if b.kind == "function"}
    added = [
        b
        for b in blocks(theirs[their_start:their_end])
        if (b.kind == "match" and b.name not in covered)
        or (b.kind == "function" and b.name not in defined)
    ]
    if not added:
        return ours, []
    insert = _catch_all_start(ours, our_start, our_end)
    title = (
        "// ---- merged from the project's previous rules (python -m tools.deploy --rules=merge)"
    )
    text = "".join(f"\n\n    {b.text.strip()}" for b in added)
    merged = f"{ours[:insert].rstrip()}\n\n    {title}{text}\n\n    {ours[insert:]}"
    return merged, [f"{b.kind} {b.name}" for b in added]


def documents_body(source: str) -> tuple[int, int]:
    """Where the body of ``match /databases/{database}/documents { ... }`` starts and ends."""
    found = _DOCUMENTS.search(_blank_comments_and_strings(source))
    if found is None:
        raise MergeError("no 'match /databases/{database}/documents' block")
    return found.end(), _closing_brace(source, found.end())


def blocks(body: str) -> list[Block]:
    """The top-level match and function blocks of a documents body, in order."""
    plain = _blank_comments_and_strings(body)
    found: list[Block] = []
    position = 0
    while (start := _next_block(plain, position)) is not None:
        function = _FUNCTION.match(plain, start)
        if function:
            kind, name, brace = "function", function.group(1), plain.index("{", start)
        else:
            match = _MATCH.match(plain, start)
            if match is None:
                raise MergeError(f"cannot read the match at: {body[start : start + 60]!r}")
            segment = match.group(1).split("/")[1]
            kind, name, brace = "match", "" if segment.startswith("{") else segment, match.end() - 1
        end = _closing_brace(body, brace + 1, plain)
        found.append(Block(body[start : end + 1], kind, name))
        position = end + 1
    return found


def _next_block(plain: str, position: int) -> int | None:
    candidates = [
        m.start()
        for pattern in (r"\bmatch\s+/", r"\bfunction\s+\w+\s*\(")
        if (m := re.compile(pattern).search(plain, position))
    ]
    return min(candidates) if candidates else None


def _catch_all_start(ours: str, start: int, end: int) -> int:
    """Where our catch-all ``match /{document=**}`` starts (new blocks go before it): the last
    one, since a block such as ``/societies/{id}`` has a wildcard of its own."""
    plain = _blank_comments_and_strings(ours)
    found = list(re.compile(r"match\s+/\{document=\*\*\}\s*\{").finditer(plain, start, end))
    return found[-1].start() if found else end


def _closing_brace(source: str, after: int, plain: str | None = None) -> int:
    """The index of the brace closing the one opened just before ``after``."""
    plain = _blank_comments_and_strings(source) if plain is None else plain
    depth = 1
    for index in range(after, len(plain)):
        if plain[index] == "{":
            depth += 1
        elif plain[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    raise MergeError("unbalanced braces")


def _blank_comments_and_strings(source: str) -> str:
    """The source with comments and string literals replaced by spaces (same length), so
    braces and keywords inside them are not taken for code."""
    pattern = re.compile(r"//[^\n]*|/\*.*?\*/|'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"", re.S)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), source)
