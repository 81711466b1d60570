"""Diskurs' Python entry, running the conversation on this backend: a project's ``main.py``
imports ``create_forum_from_config`` and ``DiskursInput`` from here instead of from ``diskurs``
and runs unchanged otherwise::

    from tools.diskurs_forum import DiskursInput, create_forum_from_config

    forum = create_forum_from_config(config_path=Path("config.yml"), base_path=HERE)
    result = await forum.ama(DiskursInput(user_query="...", metadata={"user_id": "1234"}))

``ama`` loads the project (refused at once, as ``tools.load_workflow`` refuses it), writes the
conversation document (its query, metadata and id) and waits for it to end (a
``conversation_id`` given again goes on from what its conversation stored, as with Diskurs'
conversation store: a new document ``{id}-2``, ... with the stored memory); it returns what
Diskurs' ``ama`` returns, the conversation's ``final_result`` (None when it ended without one),
and raises ``ConversationFailed`` with the error when the conversation FAILED (Diskurs raises
the exception of the step). Where it runs:

- ``client``: a Firestore client of a running backend (a test's emulators, ``make up``'s, a
  deployed project's): the project is loaded there and that backend's functions run it;
- else ``DLAB_FORUM_PROJECT`` names the project of a running backend (``make up``'s emulators
  through ``FIRESTORE_EMULATOR_HOST``, or a deployed one);
- else locally: each ``ama`` starts the emulators and the functions in this process, as
  ``python -m tools.run_conversation --local`` does (the scripted model unless a provider is
  configured).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from diskurs.entities import DiskursInput
from google.cloud import firestore

from tools.load_workflow import read_workflow, write
from tools.owner import owned
from tools.run_conversation import allow, error_records, follow, local_backend

__all__ = ["ConversationFailed", "DiskursInput", "Forum", "create_forum_from_config"]


class ConversationFailed(RuntimeError):
    """The conversation ended FAILED (or CANCELLED): its error and error records."""


class Forum:
    """A Diskurs project on this backend (``create_forum_from_config``)."""

    def __init__(
        self,
        config_path: Path,
        base_path: Path,
        client: firestore.Client | None = None,
        timeout: float = 600,
    ) -> None:
        self.base_path = base_path.resolve()
        self.config_path = base_path / config_path  # as Diskurs opens it
        self.client = client
        self.timeout = timeout
        self.workflow, self.agents = read_workflow(self.base_path, self.config_path)
        self.workflow_id = self.base_path.name
        self.log = io.StringIO()
        """The steps as they completed (``tools.run_conversation``'s lines)."""

    @contextlib.contextmanager
    def _db(self) -> Iterator[firestore.Client]:
        if self.client is not None:
            yield self.client
        elif os.environ.get("DLAB_FORUM_PROJECT"):
            yield firestore.Client(project=os.environ["DLAB_FORUM_PROJECT"])
        else:
            with local_backend() as db:
                yield db

    def run(self, diskurs_input: DiskursInput) -> Any:
        """``ama``, blocking."""
        allow(self.base_path)
        with self._db() as db:
            write(db, self.workflow, self.agents, self.workflow_id)
            cid = _new_id(db, diskurs_input.conversation_id)
            document = {
                "query": diskurs_input.user_query or "",
                "workflowId": self.workflow_id,
                "status": "PENDING",
                "metadata": dict(diskurs_input.metadata or {}),
                "storeId": diskurs_input.conversation_id or "",
            }
            db.document(f"conversations/{cid}").create(owned(document))
            conv = follow(db, cid, self.timeout, out=self.log)
            if conv.status != "DONE":
                records = [f"{r.get('field')}: {r.get('reason')}" for r in error_records(db, cid)]
                raise ConversationFailed(
                    f"conversations/{cid} {conv.status}: {conv.error} {records}"
                )
            return conv.result

    async def ama(self, diskurs_input: DiskursInput) -> Any:
        """Diskurs' ``Forum.ama``: the conversation's ``final_result``."""
        return await asyncio.to_thread(self.run, diskurs_input)


def _new_id(db: firestore.Client, conversation_id: str | None) -> str:
    """The conversation document of this ``ama``: Diskurs' ``conversation_id`` the first time,
    then ``{id}-2``, ``{id}-3``... (each goes on from what the one before stored); none given:
    a new id, and nothing stored, as Diskurs' ephemeral conversation."""
    if not conversation_id:
        return uuid.uuid4().hex[:12]
    n = 1
    while db.document(f"conversations/{_nth(conversation_id, n)}").get().exists:
        n += 1
    return _nth(conversation_id, n)


def _nth(conversation_id: str, n: int) -> str:
    return conversation_id if n == 1 else f"{conversation_id}-{n}"


def create_forum_from_config(
    config_path: Path, base_path: Path, client: firestore.Client | None = None
) -> Forum:
    """Diskurs' ``create_forum_from_config``; ``client``: the backend to run on (see above)."""
    return Forum(config_path, base_path, client)
