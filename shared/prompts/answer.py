"""The corrective turn: how a reply that failed validation goes back to the model."""

from __future__ import annotations


def corrective_turn(reason: str) -> str:
    """The message that sends a validation failure back to the model (Diskurs-style)."""
    return (
        f"Your previous reply was not valid: {reason}. "
        "Reply again with only the corrected JSON value."
    )
