"""``--import DIR`` / ``--export-on-exit DIR``: the Firestore emulator's own export format.

The emulator writes each export to a new ``firestore_export_<time>`` folder and imports from an
``*.overall_export_metadata`` file; these helpers keep one export per directory and find it again,
so the same DIR works for both flags (and firebase-tools' ``DIR/firestore_export`` layout too).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from emulator.firestore_admin import FirestoreAdmin

_METADATA = "*.overall_export_metadata"


def import_file(directory: Path) -> Path | None:
    """The newest export under ``directory``, or None if there is none (a first run)."""
    found = sorted(directory.rglob(_METADATA), key=lambda path: path.stat().st_mtime)
    return found[-1] if found else None


def export(admin: FirestoreAdmin, directory: Path) -> Path:
    """Export now, then delete the older exports in ``directory``; returns the new metadata file."""
    directory.mkdir(parents=True, exist_ok=True)
    before = {path.parent for path in directory.rglob(_METADATA)}
    admin.export(directory)
    newest = import_file(directory)
    if newest is None:
        raise RuntimeError(f"the Firestore emulator wrote no export under {directory}")
    for old in before - {newest.parent}:
        if old.parent == directory:  # only our own timestamped folders
            shutil.rmtree(old, ignore_errors=True)
    return newest
