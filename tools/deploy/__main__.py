"""``python -m tools.deploy --project P --region R [--dry-run]``; see docs/DEPLOY.md."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from functions.registry import REGISTRY
from tools.deploy import googleapis, plan, rules, rules_merge, rulesets, run, source


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tools.deploy",
        description="Deploy the functions, topics, scheduler jobs, indexes and security rules.",
    )
    parser.add_argument("--project", required=True, help="Google Cloud project id")
    parser.add_argument("--region", required=True, help="functions region, e.g. us-central1")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    parser.add_argument(
        "--source-dir",
        type=Path,
        help="where to assemble the uploaded source (default: a per-project temp directory)",
    )
    parser.add_argument(
        "--firestore-location",
        help="the Firestore database's location (nam5, eur3, us-central1, ...); read from the "
        "project when omitted (a dry run assumes --region)",
    )
    parser.add_argument("--service-account", help="runtime and trigger service account email")
    parser.add_argument("--skip-apis", action="store_true", help="do not enable the APIs")
    parser.add_argument("--jobs", type=int, default=4, help="function deploys run in parallel")
    parser.add_argument(
        "--rules",
        choices=rules.MODES,
        default="ask",
        help="the project's current security rules: ask (default: show the diff; replace "
        "rules this tool wrote after asking, refuse others), skip, merge, replace",
    )
    parser.add_argument(
        "--ruleset",
        choices=rulesets.NAMES,
        default="default",
        help="default (firestore.rules: Deliberate Lab's web app can share the project) or "
        "strict (firestore.strict.rules: participants sign in as themselves); docs/SECURITY.md",
    )
    parser.add_argument("--rules-file", type=Path, help="another rules file (instead of --ruleset)")
    parser.add_argument("--indexes", type=Path, default=source.REPO_ROOT / "firestore.indexes.json")
    return parser.parse_args(argv)


def firestore_location(project: str, database: str) -> str:
    """The database's location, read with gcloud (the database must exist already)."""
    result = subprocess.run(
        [
            "gcloud",
            "firestore",
            "databases",
            "describe",
            f"--database={database}",
            f"--project={project}",
            "--format=value(locationId)",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    location = result.stdout.strip()
    if result.returncode != 0 or not location:
        raise SystemExit(
            f"cannot read the location of Firestore database {database} in {project} "
            f"(create it first, see docs/DEPLOY.md, or pass --firestore-location):\n"
            f"{result.stderr.strip()}"
        )
    return location


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    source_dir = args.source_dir or Path(tempfile.gettempdir()) / f"dlab-deploy-{args.project}"
    location = args.firestore_location
    notes = []
    if location is None and args.dry_run:
        location = args.region
        notes.append(f"# Firestore location assumed to be {location} (--firestore-location)")
    elif location is None:
        location = firestore_location(args.project, plan.DATABASE)
    options = plan.Options(
        project=args.project,
        region=args.region,
        source_dir=source_dir,
        firestore_location=location,
        rules=args.rules_file or rulesets.path(args.ruleset),
        rules_mode=args.rules,
        indexes=args.indexes,
        service_account=args.service_account,
        enable_apis=not args.skip_apis,
    )
    steps = plan.build(options, REGISTRY)
    if args.dry_run:
        print(f"# deploy plan for project {args.project}, region {args.region} (dry run)")
        for note in notes:
            print(note)
        print(plan.render(steps))
        return 0
    if shutil.which("gcloud") is None:
        print("gcloud not found: install the Google Cloud SDK", file=sys.stderr)
        return 2
    try:
        run.execute(steps, jobs=args.jobs)
    except (
        run.DeployError,
        source.SourceError,
        googleapis.ApiError,
        rules.RulesRefused,
        rules_merge.MergeError,
    ) as error:
        print(f"\ndeploy failed: {error}", file=sys.stderr)
        return 1
    print(f"\ndeployed {len(REGISTRY)} functions to {args.project} ({args.region})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
