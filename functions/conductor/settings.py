"""The conductor's deployment settings (functions/conductor/), read from the environment each
time they are asked for (``shared.settings``; every one is listed in docs/SETTINGS.md)."""

from __future__ import annotations

from pydantic import Field

from shared.conductor.documents import NoValidReply, Semantics, ValidationMessage
from shared.settings import DlabSettings


class ConductorSettings(DlabSettings):
    """How soon the watchdog re-drives a conversation that does not move.

    - ``DLAB_CONDUCTOR_STALLED_SECONDS`` (30, one ``DLAB_LEASE_SECONDS``): a conversation still
      PENDING this long after its last write lost its creation event, and a step pending this
      long with no live lease lost its invocation or its message; the watchdog starts or
      publishes it again. A live holder renews its lease, so a slow model is never re-driven;
      a duplicate delivery is harmless anyway (it coalesces on the lease, or finds the step done).
    """

    conductor_stalled_seconds: float = Field(default=30.0, ge=0, le=86_400)
    conductor_validation_message: ValidationMessage = ValidationMessage.VERBATIM
    """How an ``is_valid`` message reaches the model: ``verbatim`` (Diskurs) or ``wrapped`` in
    'Your previous reply was not valid: ...'. A workflow's ``semantics`` overrides it."""
    conductor_no_valid_reply: NoValidReply = NoValidReply.CARRY_ON
    """A step whose replies ran out: ``carry_on`` (Diskurs: 'No valid answer found after n
    trials.', the turn goes on) or ``fail`` (the conversation FAILED). A workflow's
    ``semantics`` overrides it."""
    workflow_dirs: str = ""
    """``DLAB_WORKFLOW_DIRS``: folders (``:``-separated) besides the deployed ``workflows/``
    whose files a workflow's ``promptLocation`` may name (a Diskurs project run locally)."""

    def semantics(self, workflow: Semantics) -> Semantics:
        """The workflow's choices, the deployment's where it makes none."""
        return Semantics(
            validation_message=workflow.validation_message or self.conductor_validation_message,
            no_valid_reply=workflow.no_valid_reply or self.conductor_no_valid_reply,
        )


def conductor_settings() -> ConductorSettings:
    return ConductorSettings.current()
