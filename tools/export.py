"""An experiment's data for analysis: the download as JSON, plus tidy tables as CSV and Parquet;
or a conductor conversation as JSON Lines.

    python -m tools.export EXPERIMENT_ID --out DIR [--project P]
    python -m tools.export --conversation CONVERSATION_ID --out DIR [--project P]

Writes into DIR:
  download.json        what ``GET /v1/experiments/{id}/export`` returns (functions/download.py:
                       one assembly for both), with our ``errors`` and ``spend``
  logs.json            what ``GET /v1/experiments/{id}/export/logs`` returns
  participants.csv/.parquet one row per participant: its role, whom it represents
  answers.csv/.parquet one row per participant-stage answer (a survey's questions: one row each)
  messages.csv/.parquet one row per chat message
  model_calls.csv/.parquet one row per model call, with its tokens and cost
  journal.json         the experiment's journal: each model reply as recorded (functions/journal.py)
  journal.csv/.parquet one row per recorded reply (tools/journal_data.py's columns)

A conversation is written as DIR/CONVERSATION_ID.jsonl: its steps, model attempts, tool calls,
human answers, memory changes, error records and journal (tools/conversation_export.py says
which).

Works against the emulator (FIRESTORE_EMULATOR_HOST) or a real project (application default
credentials). The console's experiment page offers the same files as one zip (``archive``).
Columns: docs/API.md.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import os
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from google.cloud import firestore

from functions import download, store
from tools import cli, conversation_export, journal_data

Json = dict[str, Any]

ANSWER_COLUMNS = {
    "experiment_id": pa.string(),
    "cohort_id": pa.string(),
    "participant_public_id": pa.string(),
    "participant_private_id": pa.string(),
    "is_agent": pa.bool_(),
    "agent_persona_id": pa.string(),
    "stage_id": pa.string(),
    "stage_kind": pa.string(),
    "stage_name": pa.string(),
    "item_id": pa.string(),
    "value": pa.string(),
}
MESSAGE_COLUMNS = {
    "experiment_id": pa.string(),
    "cohort_id": pa.string(),
    "stage_id": pa.string(),
    "discussion_id": pa.string(),
    "message_id": pa.string(),
    "timestamp": pa.string(),
    "sender_type": pa.string(),
    "sender_id": pa.string(),
    "sender_name": pa.string(),
    "agent_id": pa.string(),
    "message": pa.string(),
}
MODEL_CALL_COLUMNS = {
    "experiment_id": pa.string(),
    "log_id": pa.string(),
    "created": pa.string(),
    "cohort_id": pa.string(),
    "participant_public_id": pa.string(),
    "participant_private_id": pa.string(),
    "stage_id": pa.string(),
    "agent_id": pa.string(),
    "description": pa.string(),
    "api_type": pa.string(),
    "model_name": pa.string(),
    "status": pa.string(),
    "attempt": pa.int64(),
    "latency_ms": pa.float64(),
    "prompt_tokens": pa.int64(),
    "completion_tokens": pa.int64(),
    "total_tokens": pa.int64(),
    "cost_usd": pa.float64(),
    "error_message": pa.string(),
}
PARTICIPANT_COLUMNS = {
    "experiment_id": pa.string(),
    "cohort_id": pa.string(),
    "participant_public_id": pa.string(),
    "participant_private_id": pa.string(),
    "role": pa.string(),
    "represents": pa.string(),
    "represented_by": pa.string(),
    "bank_persona_id": pa.string(),
    "current_stage_id": pa.string(),
    "status": pa.string(),
}
TABLES = {
    "participants": PARTICIPANT_COLUMNS,
    "answers": ANSWER_COLUMNS,
    "messages": MESSAGE_COLUMNS,
    "model_calls": MODEL_CALL_COLUMNS,
    "journal": journal_data.COLUMNS,
}


def iso(stamp: Any) -> str:
    """A download's ``{seconds, nanoseconds}`` as an ISO 8601 UTC time ('' for none)."""
    if not isinstance(stamp, dict) or "seconds" not in stamp:
        return ""
    seconds = stamp["seconds"] + stamp.get("nanoseconds", 0) / 1e9
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _items(answer: Json) -> Iterator[tuple[str, str]]:
    """(item id, value) of a stage answer: a survey's questions one by one (the answer's
    ``answer``/``choiceId``... when it has one field that is the answer), else the whole answer."""
    answers = answer.get("answerMap")
    if isinstance(answers, dict) and answers:
        for item_id, item in sorted(answers.items()):
            if isinstance(item, dict):
                fields = {k: v for k, v in item.items() if k not in ("id", "kind")}
                item = next(iter(fields.values())) if len(fields) == 1 else fields
            yield item_id, _text(item)
        return
    rest = {k: v for k, v in answer.items() if k not in ("id", "kind")}
    yield "", _text(rest)


def answer_rows(data: Json) -> list[Json]:
    experiment_id = data["experiment"].get("id", "")
    stages = data["stageMap"]
    rows = []
    for public_id, participant in sorted(data["participantMap"].items()):
        profile = participant["profile"]
        agent = profile.get("agentConfig") or {}
        for stage_id, answer in sorted(participant["answerMap"].items()):
            stage = stages.get(stage_id, {})
            for item_id, value in _items(answer):
                rows.append(
                    {
                        "experiment_id": experiment_id,
                        "cohort_id": profile.get("currentCohortId", ""),
                        "participant_public_id": public_id,
                        "participant_private_id": profile.get("privateId", ""),
                        "is_agent": bool(agent),
                        "agent_persona_id": agent.get("agentId", ""),
                        "stage_id": stage_id,
                        "stage_kind": answer.get("kind") or stage.get("kind", ""),
                        "stage_name": stage.get("name", ""),
                        "item_id": item_id,
                        "value": value,
                    }
                )
    return rows


def participant_rows(data: Json) -> list[Json]:
    """One row per participant: its role (Deliberate Lab's treatment roles, docs/AGENTS.md) and
    who represents whom (public ids)."""
    experiment_id = data["experiment"].get("id", "")
    roles = data.get("roleMap") or {}
    rows = []
    for public_id, participant in sorted(data["participantMap"].items()):
        profile = participant["profile"]
        role = roles.get(public_id) or {}
        rows.append(
            {
                "experiment_id": experiment_id,
                "cohort_id": profile.get("currentCohortId", ""),
                "participant_public_id": public_id,
                "participant_private_id": profile.get("privateId", ""),
                "role": role.get("role", ""),
                "represents": role.get("represents") or "",
                "represented_by": " ".join(role.get("representedBy") or []),
                "bank_persona_id": (profile.get("agentConfig") or {}).get("personaId") or "",
                "current_stage_id": profile.get("currentStageId", ""),
                "status": profile.get("currentStatus", ""),
            }
        )
    return rows


def message_rows(data: Json) -> list[Json]:
    experiment_id = data["experiment"].get("id", "")
    rows = []
    for cohort_id, cohort in sorted(data["cohortMap"].items()):
        for stage_id, messages in sorted(cohort["chatMap"].items()):
            for message in messages:
                rows.append(
                    {
                        "experiment_id": experiment_id,
                        "cohort_id": cohort_id,
                        "stage_id": stage_id,
                        "discussion_id": message.get("discussionId") or "",
                        "message_id": message.get("id", ""),
                        "timestamp": iso(message.get("timestamp")),
                        "sender_type": message.get("type", ""),
                        "sender_id": message.get("senderId", ""),
                        "sender_name": (message.get("profile") or {}).get("name") or "",
                        "agent_id": message.get("agentId", ""),
                        "message": message.get("message", ""),
                    }
                )
    return rows


def model_call_rows(experiment_id: str, logs: list[Json]) -> list[Json]:
    rows = []
    for entry in logs:
        if entry.get("type") != "model":
            continue
        response = entry.get("response") or {}
        usage = response.get("usage") or {}
        rows.append(
            {
                "experiment_id": experiment_id,
                "log_id": entry.get("id", ""),
                "created": iso(entry.get("createdTimestamp")),
                "cohort_id": entry.get("cohortId", ""),
                "participant_public_id": entry.get("publicId", ""),
                "participant_private_id": entry.get("privateId") or entry.get("participantId", ""),
                "stage_id": entry.get("stageId", ""),
                "agent_id": entry.get("agentId", ""),
                "description": entry.get("description", ""),
                "api_type": entry.get("apiType", ""),
                "model_name": entry.get("modelName", ""),
                "status": response.get("status", ""),
                "attempt": int(entry.get("attempt") or 0),
                "latency_ms": float(entry.get("latencyMs") or 0),
                "prompt_tokens": int(usage.get("promptTokens") or 0),
                "completion_tokens": int(usage.get("completionTokens") or 0),
                "total_tokens": int(usage.get("totalTokens") or 0),
                "cost_usd": float(entry.get("costUsd") or 0),
                "error_message": response.get("errorMessage") or "",
            }
        )
    return rows


def tables(data: Json, logs: list[Json]) -> dict[str, list[Json]]:
    """The tidy tables of a download and its logs, by name (``TABLES``' columns)."""
    return {
        "participants": participant_rows(data),
        "answers": answer_rows(data),
        "messages": message_rows(data),
        "model_calls": model_call_rows(data["experiment"].get("id", ""), logs),
    }


def _csv(rows: list[Json], columns: dict[str, pa.DataType]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def _parquet(rows: list[Json], columns: dict[str, pa.DataType]) -> bytes:
    schema = pa.schema(list(columns.items()))
    table = pa.Table.from_pylist(rows, schema=schema)
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def files(experiment_id: str) -> dict[str, bytes] | None:
    """Every file of the export by name, or None when there is no such experiment."""
    data = download.experiment_download(experiment_id)
    logs = download.experiment_logs(experiment_id)
    if data is None or logs is None:
        return None
    run = f"experiments/{experiment_id}"
    journal = journal_data.entries(store.db(), run)
    out = {
        "download.json": json.dumps(data, indent=1).encode(),
        "logs.json": json.dumps(logs, indent=1).encode(),
        "journal.json": json.dumps(journal, indent=1, ensure_ascii=False).encode(),
    }
    found = {**tables(data, logs), "journal": journal_data.rows(run, journal)}
    for name, rows in found.items():
        out[f"{name}.csv"] = _csv(rows, TABLES[name])
        out[f"{name}.parquet"] = _parquet(rows, TABLES[name])
    return out


def archive(experiment_id: str) -> bytes | None:
    """The export as one zip (what the console's download button serves)."""
    found = files(experiment_id)
    if found is None:
        return None
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, content in found.items():
            zipped.writestr(f"{experiment_id}/{name}", content)
    return out.getvalue()


PROG = "python -m tools.export"


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.Parser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("experiment_id", nargs="?", type=cli.document_id)
    parser.add_argument(
        "--conversation", type=cli.document_id, help="export this conductor conversation instead"
    )
    parser.add_argument("--out", type=Path, required=True, help="the folder to write into")
    parser.add_argument("--project", default=os.environ.get("GOOGLE_CLOUD_PROJECT"))
    args = parser.parse_args(argv)
    if (args.experiment_id is None) == (args.conversation is None):
        parser.error("name an experiment, or a conversation with --conversation")
    return args


def _conversation_files(project: str, conversation_id: str) -> dict[str, bytes] | None:
    found = conversation_export.records(firestore.Client(project=project), conversation_id)
    return None if found is None else {f"{conversation_id}.jsonl": conversation_export.jsonl(found)}


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if not args.project:
        return cli.usage_error(PROG, "no project: pass --project or set GOOGLE_CLOUD_PROJECT")
    try:  # an unusable folder is found before anything is read
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return cli.usage_error(PROG, f"--out {args.out}: {error.strerror or error}")
    os.environ["GOOGLE_CLOUD_PROJECT"] = args.project  # the functions' client reads it
    if args.conversation is not None:
        found = _conversation_files(args.project, args.conversation)
        what = f"conversation {args.conversation}"
    else:
        found, what = files(args.experiment_id), f"experiment {args.experiment_id}"
    if found is None:
        print(f"error: no {what}", file=sys.stderr)
        return 1
    for name, content in found.items():
        try:
            (args.out / name).write_bytes(content)
        except OSError as error:
            return cli.usage_error(PROG, f"--out {args.out}: {error.strerror or error}")
        print(f"{args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
