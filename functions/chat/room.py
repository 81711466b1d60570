"""Where a conversation lives: the cohort's group chat of a stage, or one participant's private
chat of a stage. Messages, election records and locks are all placed relative to it."""

from __future__ import annotations

import dataclasses

from functions import store


@dataclasses.dataclass(frozen=True)
class Room:
    experiment_id: str
    cohort_id: str
    stage_id: str
    participant_id: str = ""
    """The private chat's participant (private id); '' for the cohort's group chat."""

    @property
    def is_private(self) -> bool:
        return bool(self.participant_id)

    @property
    def base_path(self) -> str:
        """The document the chat hangs under (DL: publicStageData, or the participant's
        stageData for a private chat)."""
        if self.is_private:
            return store.stage_data_path(self.experiment_id, self.participant_id, self.stage_id)
        return self.public_path

    @property
    def public_path(self) -> str:
        return store.public_stage_data_path(self.experiment_id, self.cohort_id, self.stage_id)

    @property
    def chats_path(self) -> str:
        return self.base_path + ("/privateChats" if self.is_private else "/chats")

    def message_path(self, message_id: str) -> str:
        return f"{self.chats_path}/{message_id}"

    def log_path(self, log_id: str) -> str:
        """DL's trigger logs: ``.../triggerLogs/{id}`` under the same document as the chat."""
        if not log_id or "/" in log_id:
            raise ValueError(f"invalid trigger log id: {log_id!r}")
        return f"{self.base_path}/triggerLogs/{log_id}"
