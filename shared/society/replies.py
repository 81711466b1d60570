"""Reading a member's reply as the seed does (seed 003, "Parsing Logic").

Apart from ``actions`` because it uses the model layer's JSON repair (``shared.llm``), whose
scripted model imports ``actions``.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from shared.llm.json_output import parse_json_reply
from shared.stages.base import AnswerValidationError

POST_CHARS = 2000
_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)
"""The seed's test for JSON in a reply (``parse_agent_response``): a fragment within braces."""


@dataclasses.dataclass
class ReplyReading:
    """The seed's rule for a reply (seed 003, "Parsing Logic"), as a model call's ``parse``:
    a reply with no JSON in it is the member speaking, so its text becomes a forum post (cut to
    2,000 characters) instead of a failure; JSON that does not parse, and an empty reply, are
    the model's mistakes (AnswerValidationError: a corrective re-prompt, then idle). ``prose``
    says whether the reading last accepted was such a text."""

    prose: bool = False

    def parse(self, text: str) -> Any:
        self.prose = False
        if not text.strip():
            raise AnswerValidationError("the reply was empty; reply with one JSON action object")
        if _OBJECT.search(text) is None:
            self.prose = True
            return {"action": "forum_post", "content": text.strip()[:POST_CHARS]}
        return parse_json_reply(text)
