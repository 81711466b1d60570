"""Entry-point factory: turns a registry spec into a functions-framework CloudEvent function."""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable
from typing import Any

import functions_framework

from functions import _events, reads, usage, work
from functions.deadline import running_for
from functions.errors import invoked_as, kind_of, record_error
from functions.registry import REGISTRY, FirestoreTrigger, FunctionSpec
from shared.errors import HANDLING, BackendError, Kind
from shared.llm import providers
from shared.models import DocumentError

log = logging.getLogger(__name__)


@functools.cache
def _handler(dotted: str) -> Callable[[Any], None]:
    module, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module), name)


def preload(target: str) -> None:
    """Import the handler's module of the registry function named ``target`` (none for a name
    the registry lacks): the deployed function's trigger family, while its instance starts
    rather than at its first event; and make the clients of ``DLAB_PRELOAD_PROVIDERS``."""
    spec = next((s for s in REGISTRY if s.name == target), None)
    if spec is None:
        return
    importlib.import_module(spec.handler.partition(":")[0])
    for api_type in work.backbone_settings().preload_providers:
        providers.client_for(api_type)


def dispatch(spec: FunctionSpec, cloud_event: Any) -> None:
    """Decode the event, drop what production would never deliver, and run the handler.

    A DocumentError (a malformed or missing document) is recorded and swallowed: retrying would
    not fix the document, and raising would only make a retry storm.
    """
    if isinstance(spec.trigger, FirestoreTrigger):
        event: Any = _events.firestore_event(cloud_event, spec.trigger.document)
        if event.is_phantom or (spec.trigger.event == "updated" and event.is_noop):
            return
    else:
        event = _events.pubsub_event(cloud_event)
    with usage.counting() as used, reads.invocation():
        try:
            _run(spec, event)
        finally:
            usage.emit(used, spec.name, _subject(event))


def _run(spec: FunctionSpec, event: Any) -> None:
    """Run the handler; what escapes it is handled by its kind (``shared.errors.HANDLING``):
    a pause is no failure; bad input and user code are recorded and not retried (they would
    fail the same way); anything else is recorded where the experimenter looks, unless its
    record is written already, and raised so the delivery counts as failed and retrying
    functions run again, within ``DLAB_DELIVERY_MAX_FAILURES``."""
    try:
        with running_for(spec.timeout_s), invoked_as(spec.name):
            _handler(spec.handler)(event)
    except Exception as error:
        kind = kind_of(error)
        if kind is Kind.PAUSE:
            return  # recorded on its run: neither a failed delivery nor retried
        where = _recorded_as(event, error, kind)
        if not (isinstance(error, BackendError) and error.recorded):
            record_error(spec.name, where, event_id=event.id)
        if not HANDLING[kind].retried or not _retry_again(spec, event, where):
            return
        raise


def _recorded_as(event: Any, error: Exception, kind: Kind) -> DocumentError:
    """The record of an error that ended a delivery: a bad document's own, else filed under
    the event's subject (a bug or an outage, the function's)."""
    if isinstance(error, DocumentError):
        return error
    field = "(input)" if kind is Kind.BAD_INPUT else "(function)"
    return DocumentError(_subject(event), field, f"{type(error).__name__}: {error}")


def _retry_again(spec: FunctionSpec, event: Any, where: DocumentError | None) -> bool:
    """Whether a failed delivery of a retrying function may be retried: not once the event
    failed ``DLAB_DELIVERY_MAX_FAILURES`` times (it is then acknowledged, with a record), so
    no event is retried, and its model called, without bound."""
    if not spec.retry:
        return True
    settings = work.backbone_settings()
    failures = work.bounded_delivery(spec.name, event.id, settings)
    if failures < settings.delivery_max_failures:
        return True
    cause = f"; the last: {where.reason}" if where is not None else ""
    reason = f"gave up on event {event.id} after {failures} failed deliveries{cause}"
    record_error(spec.name, DocumentError(_subject(event), "(delivery)", reason), event.id)
    return False


OWN_ROOTS = {"societyId": "societies", "debateId": "debates", "conversationId": "conversations"}
"""A Pub/Sub message naming one of these belongs to that root document (the systems whose
documents are not under an experiment)."""


def _subject(event: Any) -> str:
    """The document an unexpected failure is filed under: the event's document, or for a
    Pub/Sub message the society, debate, conversation or experiment (and participant) it names."""
    if isinstance(event, _events.FirestoreEvent):
        return event.document
    try:
        payload = event.json()
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        return event.path
    for key, root in OWN_ROOTS.items():
        if isinstance(payload.get(key), str):
            return f"{root}/{payload[key]}" if payload[key] else event.path
    if not isinstance(payload.get("experimentId"), str):
        return event.path
    path = f"experiments/{payload['experimentId']}"
    agent = payload.get("agentId")
    if payload.get("agentType") == "mediator" and isinstance(agent, str) and agent:
        return f"{path}/mediators/{agent}"  # a mediator's chat turn: the record names it
    participant = payload.get("participantId") or agent
    if isinstance(participant, str) and participant:
        path += f"/participants/{participant}"
    return path


def cloud_event_function(spec: FunctionSpec) -> Callable[[Any], None]:
    def entry(cloud_event: Any) -> None:
        dispatch(spec, cloud_event)

    entry.__name__ = entry.__qualname__ = spec.name
    entry.__doc__ = spec.description
    return functions_framework.cloud_event(entry)
