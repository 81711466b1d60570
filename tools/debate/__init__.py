"""The hierarchical debate from outside the functions: create one from a JSON file, follow its
progress, export its transcript (``python -m tools.debate FILE``)."""
