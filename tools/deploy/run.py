"""Running a plan: gcloud commands, the source tree and the rules release, in order.

Every step is idempotent, so a failed deploy is fixed and re-run as a whole: topics and indexes
that exist are fine, scheduler jobs that exist are updated, functions are redeployed. Function
deploys (minutes each, mostly waiting on Cloud Build) run a few at a time.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from tools.deploy import googleapis, rules, source
from tools.deploy.plan import Assemble, FieldIndexes, Gcloud, ReleaseRules, Step

Print = Callable[[str], None]
_EXISTS = ("already exists", "ALREADY_EXISTS")


class DeployError(RuntimeError):
    pass


def _gcloud(command: Gcloud) -> tuple[bool, str]:
    """Run one command; (ok, what happened)."""
    result = subprocess.run(command.argv, capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return True, "done"
    exists = any(marker in result.stderr for marker in _EXISTS)
    if exists and command.exists_ok:
        return True, "already exists"
    if exists and command.if_exists:
        update = subprocess.run(command.if_exists, capture_output=True, text=True, check=False)
        if update.returncode == 0:
            return True, "updated"
        result = update
    tail = "\n".join(result.stderr.strip().splitlines()[-15:])
    return False, f"failed (exit {result.returncode}):\n{tail}"


def _timed(command: Gcloud) -> tuple[bool, str]:
    start = time.monotonic()
    ok, what = _gcloud(command)
    return ok, f"{what} ({time.monotonic() - start:.0f} s)"


def execute(steps: Sequence[Step], jobs: int = 4, out: Print = print) -> None:
    """Run the steps in order; consecutive function deploys run ``jobs`` at a time."""
    functions: list[Gcloud] = []
    for step in steps:
        if isinstance(step, Gcloud) and step.function_name:
            functions.append(step)
            continue
        if functions:
            _deploy_functions(functions, jobs, out)
            functions = []
        _one(step, out)
    if functions:
        _deploy_functions(functions, jobs, out)


def _one(step: Step, out: Print) -> None:
    out(step.describe())
    if isinstance(step, Assemble):
        source.assemble(step.source_dir)
        out("  -> written")
    elif isinstance(step, ReleaseRules):
        out(f"  -> {rules.deploy(step, out)}")
    elif isinstance(step, FieldIndexes):
        body = step.body()
        query = f"{step.path}?updateMask={step.update_mask}"
        operation = googleapis.call("firestore", "PATCH", query, body, step.project)
        out(f"  -> started {operation.get('name', 'operation')}")
    else:
        ok, what = _timed(step)
        out(f"  -> {what}")
        if not ok:
            raise DeployError(f"{step.describe()}\n{what}")


def _deploy_functions(group: list[Gcloud], jobs: int, out: Print) -> None:
    out(f"deploying {len(group)} functions, {jobs} at a time:")
    for command in group:
        out(f"  {command.describe()}")
    failed = []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for command, (ok, what) in zip(group, pool.map(_timed, group), strict=True):
            out(f"  {command.function_name}: {what}")
            if not ok:
                failed.append(command.function_name)
    if failed:
        raise DeployError(f"functions not deployed: {', '.join(map(str, failed))}")
