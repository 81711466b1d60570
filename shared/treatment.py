"""Deliberate Lab's reserved treatment variables (their PR #1171): pure, no I/O.

A participant's ``variableMap`` holds JSON values; a treatment variable is an object, an array of
objects (one per round, a within-subjects permutation), or expanded into ``name_1``,
``name_2``, ... (one per round). Keys beginning with an underscore are reserved:

- ``_isObserver``, ``_hasRepresentative``, ``_numOtherAgents``, ``_numInactivePersonas``,
  ``_swapMediator`` are *hoisted* onto the participant (``isObserver``, ``hasRepresentative``,
  ``otherAgentGeneration.{numOtherAgents,numInactivePersonas}``, ``swapMediator``) for a round;
- ``_skipPrivateChats`` is read directly, per round (a private chat precedes the transfer that
  names its round).

A round is named by a transfer stage's ``treatmentIndex``: a stage belongs to the round of the
last transfer with a numeric ``treatmentIndex`` before it (round 0 before any), and a private
chat to the round of the first transfer after it (the PR's ``getRoundTreatmentIndex``).

The persona bank's match key (``match_hash``) is the PR's ``personaMatchHash`` byte for byte:
the SHA-256 of the canonical JSON of the round's variables, so personas generated for a
condition by Deliberate Lab's tooling are found here too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from shared.errors import BadInput
from shared.models import StageConfig

HOISTED: dict[str, tuple[str, type]] = {
    "_isObserver": ("isObserver", bool),
    "_hasRepresentative": ("hasRepresentative", bool),
    "_numOtherAgents": ("numOtherAgents", int),
    "_numInactivePersonas": ("numInactivePersonas", int),
    "_swapMediator": ("swapMediator", str),
}
"""Reserved key -> (participant field, type), the PR's TREATMENT_HOIST_FIELDS."""
SKIP_PRIVATE_CHATS = "_skipPrivateChats"
RESERVED = frozenset([*HOISTED, SKIP_PRIVATE_CHATS])
MAX_SPAWNED = 20
"""At most this many other agents or inactive personas per participant and round (ours: the
PR has no bound, and a typo of 1000 would create a thousand agents)."""

_SUFFIX = re.compile(r"_(\d+)$")


class TreatmentError(BadInput, ValueError):
    """A reserved value that cannot be used; ``variable`` names the variable that holds it (or
    the participant field, for a hoisted value set by hand)."""

    def __init__(self, variable: str, reason: str) -> None:
        super().__init__(f"variableMap.{variable}: {reason}")
        self.variable = variable
        self.reason = reason


@dataclasses.dataclass(frozen=True)
class Treatment:
    """A participant's hoisted treatment for one round (the PR's participant fields)."""

    is_observer: bool = False
    has_representative: bool = False
    num_other_agents: int = 0
    num_inactive_personas: int = 0
    swap_mediator: str = ""

    def fields(self) -> dict[str, Any]:
        """As Deliberate Lab writes them on the participant."""
        return {
            "isObserver": self.is_observer,
            "hasRepresentative": self.has_representative,
            "otherAgentGeneration": {
                "numOtherAgents": self.num_other_agents,
                "numInactivePersonas": self.num_inactive_personas,
            },
            "swapMediator": self.swap_mediator,
        }

    @classmethod
    def of_fields(cls, data: Mapping[str, Any]) -> Treatment:
        """The treatment as written on a participant document (the hoisted fields)."""
        gen = data.get("otherAgentGeneration") or {}
        return cls(
            is_observer=data.get("isObserver") is True,
            has_representative=data.get("hasRepresentative") is True,
            num_other_agents=_count(
                gen.get("numOtherAgents"), "otherAgentGeneration.numOtherAgents"
            ),
            num_inactive_personas=_count(
                gen.get("numInactivePersonas"), "otherAgentGeneration.numInactivePersonas"
            ),
            swap_mediator=str(data.get("swapMediator") or ""),
        )

    @property
    def represented(self) -> bool:
        """An observer with a representative (the PR spawns one only for observers)."""
        return self.is_observer and self.has_representative


def _count(value: Any, variable: str) -> int:
    """The PR's ``Number(value)``, for a count: NaN, a negative number and a fraction are
    refused (the PR would spawn nothing for NaN, and loop forever on nothing else)."""
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        return int(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TreatmentError(variable, f"{value!r} is not a number") from None
    if not math.isfinite(number) or number < 0 or number != int(number):
        raise TreatmentError(variable, f"{value!r} is not a whole number of agents >= 0")
    if number > MAX_SPAWNED:
        raise TreatmentError(variable, f"{value!r} is more than {MAX_SPAWNED} agents")
    return int(number)


def _coerce(value: Any, kind: type, variable: str) -> Any:
    """The PR's coerceTreatmentValue: a boolean is ``true`` or ``"true"``; a string is the
    value's text."""
    if kind is bool:
        return value is True or str(value) == "true"
    if kind is int:
        return _count(value, variable)
    return "" if value is None else str(value)


def _parsed(value: str) -> Any:
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return None


def _selected(name: str, parsed: Any, index: int) -> Any:
    """The round's element of a variable: ``[index]`` of an array, a ``name_{index+1}`` object
    (another suffix: not this round), any other object as is."""
    if isinstance(parsed, list):
        return parsed[index] if 0 <= index < len(parsed) else None
    if isinstance(parsed, dict):
        suffix = _SUFFIX.search(name)
        if suffix and int(suffix.group(1)) != index + 1:
            return None
        return parsed
    return None


def _reserved_keys(value: Any, into: set[str]) -> None:
    if isinstance(value, list):
        for item in value:
            _reserved_keys(item, into)
    elif isinstance(value, dict):
        for key, nested in value.items():
            if key in RESERVED:
                into.add(key)
            _reserved_keys(nested, into)


def managed_keys(variable_map: Mapping[str, str]) -> set[str]:
    """The reserved keys the participant's variables use anywhere (any round)."""
    keys: set[str] = set()
    for value in variable_map.values():
        _reserved_keys(_parsed(value), keys)
    return keys


def mentions_reserved(variable_map: Mapping[str, str]) -> bool:
    """A cheap test before parsing: no reserved key appears in any value."""
    return any("_" in v and any(k in v for k in RESERVED) for v in variable_map.values())


def _hoist(found: dict[str, Any], value: Any, variable: str) -> None:
    if isinstance(value, list):
        for item in value:
            _hoist(found, item, variable)
    elif isinstance(value, dict):
        for key, raw in value.items():
            if key in HOISTED:
                found[key] = _coerce(raw, HOISTED[key][1], variable)
            elif isinstance(raw, (dict, list)):
                _hoist(found, raw, variable)


def hoisted(variable_map: Mapping[str, str], index: int, current: Treatment) -> Treatment:
    """The PR's applyHoistedTreatment: every hoisted key the variables use anywhere is reset to
    its default, then the round's values applied; a key the variables never use keeps its value
    on ``current`` (set by hand by an experimenter)."""
    found: dict[str, Any] = {}
    for key in managed_keys(variable_map) & set(HOISTED):
        found[key] = _coerce(None, HOISTED[key][1], key)
    for name, value in variable_map.items():
        treatment = _selected(name, _parsed(value), index)
        if isinstance(treatment, dict):
            _hoist(found, treatment, name)
    return Treatment(
        is_observer=found.get("_isObserver", current.is_observer),
        has_representative=found.get("_hasRepresentative", current.has_representative),
        num_other_agents=found.get("_numOtherAgents", current.num_other_agents),
        num_inactive_personas=found.get("_numInactivePersonas", current.num_inactive_personas),
        swap_mediator=found.get("_swapMediator", current.swap_mediator),
    )


def flag_at(variable_map: Mapping[str, str], index: int, key: str) -> bool:
    """The PR's treatmentFlagAtIndex: the round's treatment sets ``key`` to JSON ``true``."""
    for name, value in variable_map.items():
        treatment = _selected(name, _parsed(value), index)
        if isinstance(treatment, dict) and treatment.get(key) is True:
            return True
    return False


def flag_any(variable_map: Mapping[str, str], key: str) -> bool:
    """The PR's treatmentSkipsPrivateChats: any round's treatment sets ``key`` (the fallback for
    a private chat no transfer attributes to a round)."""
    for value in variable_map.values():
        parsed = _parsed(value)
        for condition in parsed if isinstance(parsed, list) else [parsed]:
            if isinstance(condition, dict) and condition.get(key) is True:
                return True
    return False


def _treatment_index(stage: StageConfig) -> int | None:
    index = getattr(stage, "treatment_index", None)
    return index if isinstance(index, int) and not isinstance(index, bool) else None


def round_of(stages: Sequence[StageConfig], stage_id: str) -> int:
    """The round a stage belongs to: the ``treatmentIndex`` of the last transfer before it that
    names one, else 0 (the PR hoists round 0 at creation and a transfer's index after it)."""
    ids = [s.id for s in stages]
    position = ids.index(stage_id) if stage_id in ids else len(ids)
    for stage in reversed(stages[:position]):
        if stage.kind == "transfer" and _treatment_index(stage) is not None:
            return int(_treatment_index(stage) or 0)
    return 0


def private_chat_round(stages: Sequence[StageConfig], stage_id: str) -> int | None:
    """The PR's getRoundTreatmentIndex: the ``treatmentIndex`` of the first transfer after the
    private chat; None when another private chat comes first or no transfer names one."""
    ids = [s.id for s in stages]
    for stage in stages[ids.index(stage_id) + 1 :]:
        if stage.kind == "transfer":
            return _treatment_index(stage)
        if stage.kind == "privateChat":
            return None
    return None


def skips_private_chat(
    variable_map: Mapping[str, str], stages: Sequence[StageConfig], stage_id: str
) -> bool:
    """Whether the participant skips this private chat: its round's treatment says so, or, when
    no transfer attributes it to a round, any round's does (the PR's fallback)."""
    index = private_chat_round(stages, stage_id)
    if index is None:
        return flag_any(variable_map, SKIP_PRIVATE_CHATS)
    return flag_at(variable_map, index, SKIP_PRIVATE_CHATS)


def stripped(variable_map: Mapping[str, str]) -> dict[str, str]:
    """The PR's inheritSpawnedAgentVariables: the variables an agent spawned beside the
    participant inherits, without the reserved keys (none of the treatment applies to it)."""

    def strip(value: Any) -> Any:
        if isinstance(value, list):
            return [strip(v) for v in value]
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in RESERVED}
        return value

    out = {}
    for name, value in variable_map.items():
        parsed = _parsed(value)
        keys: set[str] = set()
        _reserved_keys(parsed, keys)
        out[name] = json.dumps(strip(parsed), separators=(",", ":")) if keys else value
    return out


# --- the persona bank's match key -------------------------------------------------------------


def round_variables(variable_map: Mapping[str, str], index: int) -> dict[str, Any]:
    """The PR's computeRoundVariableMap: arrays at ``index`` (out of range: left out), objects
    as they are, everything else (not JSON, a scalar) left out."""
    out: dict[str, Any] = {}
    for name, value in variable_map.items():
        parsed = _parsed(value)
        if isinstance(parsed, list):
            if 0 <= index < len(parsed):
                out[name] = parsed[index]
        elif isinstance(parsed, dict):
            out[name] = parsed
    return out


def _number(value: int | float) -> str:
    """JavaScript's number to string for the values JSON carries: an integral float is written
    without its ``.0`` (``4.0`` is ``4``, as JSON.parse reads it)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return json.dumps(value)


def canonical(value: Any) -> str:
    """The PR's canonicalStringify: keys sorted at every level, arrays in order, no spaces,
    strings as JSON.stringify writes them (non-ASCII as is)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=_utf16)
        return "{" + ",".join(f"{canonical(str(k))}:{canonical(value[k])}" for k in keys) + "}"
    raise TypeError(f"not a JSON value: {value!r}")


def _utf16(key: str) -> bytes:
    """JavaScript sorts strings by UTF-16 code units."""
    return key.encode("utf-16-be")


def match_hash(round_vars: Mapping[str, Any]) -> str:
    """The PR's personaMatchHash: SHA-256 hex of the canonical round variables."""
    return hashlib.sha256(canonical(dict(round_vars)).encode()).hexdigest()


def select_to_claim(personas: Sequence[Mapping[str, Any]], claimant: str) -> str | None:
    """The PR's selectPersonaToClaim: of the personas ``claimant`` has not used, the least
    used, ties broken by a shuffle seeded with the claimant (a different order per claimant,
    the same on a retry). Returns the persona's id, or None when every one is used."""
    candidates = [p for p in personas if claimant not in (p.get("usedBy") or [])]
    if not candidates:
        return None
    least = min(int(p.get("usageCount") or 0) for p in candidates)
    tied = sorted(str(p["id"]) for p in candidates if int(p.get("usageCount") or 0) == least)
    random.Random(claimant).shuffle(tied)
    return tied[0]


# --- roles as the API, the export and the console show them -----------------------------------


def role_of(profile: Mapping[str, Any]) -> str:
    """``participant`` (a human taking part), ``observer``, ``agent``, ``representative`` or
    ``inactive`` (persona), from a participant document."""
    config = profile.get("agentConfig") or {}
    if config.get("isInactivePersona"):
        return "inactive"
    if config.get("representativeOf"):
        return "representative"
    if config:
        return "agent"
    return "observer" if profile.get("isObserver") is True else "participant"


def role_map(profiles: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """By public id: each participant's role, whom it represents and who represents it (public
    ids; a representative stands for the observer whose private id it names)."""
    by_private = {str(p.get("privateId") or ""): p for p in profiles}
    out: dict[str, dict[str, Any]] = {}
    for p in profiles:
        out[str(p.get("publicId") or p.get("privateId") or "")] = {
            "role": role_of(p),
            "represents": None,
            "representedBy": [],
        }
    for p in profiles:
        observer = by_private.get(str((p.get("agentConfig") or {}).get("representativeOf") or ""))
        if observer is None:
            continue
        rep_id = str(p.get("publicId") or p.get("privateId") or "")
        observer_id = str(observer.get("publicId") or observer.get("privateId") or "")
        out[rep_id]["represents"] = observer_id
        out[observer_id]["representedBy"].append(rep_id)
    return out
