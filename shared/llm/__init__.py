"""The model layer: a provider-neutral interface, the offline scripted model, provider lookup."""

from shared.llm.base import (
    Credentials,
    Message,
    ModelClient,
    ModelError,
    ModelReply,
    ModelRequest,
    Usage,
)
from shared.llm.providers import client_for, effective_api_type

__all__ = [
    "Credentials",
    "Message",
    "ModelClient",
    "ModelError",
    "ModelReply",
    "ModelRequest",
    "Usage",
    "client_for",
    "effective_api_type",
]
