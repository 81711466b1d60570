"""The backend's errors, each saying what trying again would do.

Every error the backend raises on purpose is a ``BackendError`` of one of five kinds, and what
a kind means for a unit of work and for the event that ran it is decided in one place, from
the kind alone (``functions.work`` for a unit, ``functions._entry`` for a delivery). Temporal's
non-retryable errors are the model: the error says whether a retry can help, the runner acts
on it.

- ``PlatformError``: Firestore, Pub/Sub or the runtime failed for a moment. Retried, not
  counted against the work (``DLAB_WORK_MAX_PLATFORM_FAILURES`` bounds it). The transient
  ``google.api_core`` exceptions are of this kind too (``functions.errors.kind_of``).
- ``WorkError``: the work failed (a provider kept failing, no valid answer came). Retried,
  each attempt counted against ``DLAB_WORK_MAX_ATTEMPTS``. Anything unexpected (a bug) is
  treated as this kind.
- ``UserCodeError``: code a user wrote raised. The unit ends at once: running it again would
  not fix it, and would call the model again.
- ``BadInput``: a document, template or setting cannot be used. Recorded naming the document
  and field, not retried; fixing the input wakes what it blocked.
- ``Pause``: a spend cap was reached. Neither a failure nor retried; the run resumes once the
  cap is raised.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

T = TypeVar("T")


class Kind(StrEnum):
    PLATFORM = "platform"
    WORK = "work"
    USER_CODE = "user-code"
    BAD_INPUT = "bad-input"
    PAUSE = "pause"


@dataclasses.dataclass(frozen=True)
class Handling:
    """What a kind of error means for the unit that raised it and for its event."""

    retried: bool
    """The event is delivered again (the platform's retry)."""
    counted: bool
    """It spends one of the work's attempts."""
    ends: bool
    """The unit ends now, with its record."""


HANDLING: dict[Kind, Handling] = {
    Kind.PLATFORM: Handling(retried=True, counted=False, ends=False),
    Kind.WORK: Handling(retried=True, counted=True, ends=False),
    Kind.USER_CODE: Handling(retried=False, counted=True, ends=True),
    Kind.BAD_INPUT: Handling(retried=False, counted=True, ends=False),
    Kind.PAUSE: Handling(retried=False, counted=False, ends=False),
}


class BackendError(Exception):
    """The base of the backend's own errors; ``kind`` says what a retry would do."""

    kind: ClassVar[Kind] = Kind.WORK
    recorded: ClassVar[bool] = False
    """Its error record is written already: whoever catches it last does not write another."""


class PlatformError(BackendError):
    kind = Kind.PLATFORM


class WorkError(BackendError):
    kind = Kind.WORK


class BadInput(BackendError):
    kind = Kind.BAD_INPUT


class Pause(BackendError):
    kind = Kind.PAUSE


class UserCodeError(BackendError):
    """Code a user wrote (a debate kit's function, a workflow's validator or rule) raised."""

    kind = Kind.USER_CODE

    def __init__(self, function: str, error: BaseException) -> None:
        super().__init__(f"user function {function} raised {type(error).__name__}: {error}")
        self.function = function
        self.error = error


class AlreadyRecorded(WorkError):
    """Raised after its error record was written, only to make the platform retry the event;
    the entry point does not record it again."""

    recorded = True


def user_code(
    function: str,
    call: Callable[..., T],
    *args: Any,
    passing: tuple[type[BaseException], ...] = (),
) -> T:
    """Call a user's function: what it raises becomes a ``UserCodeError`` naming it, except the
    exceptions a caller expects of it (``passing``: a validator's ``AnswerValidationError``)."""
    try:
        return call(*args)
    except passing:
        raise
    except UserCodeError:
        raise
    except Exception as error:
        raise UserCodeError(function, error) from error
