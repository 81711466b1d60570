"""Replay a finished run from its journal, or re-run it with one thing changed
(``python -m tools.replay``; docs/WORK.md, *Replay*)."""
