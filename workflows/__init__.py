"""Conductor workflows' deployed code: one package per workflow, one per agent (``prompt.py``).

The templates, descriptions and ``config.yml`` are loaded into Firestore by
``python -m tools.load_workflow workflows/<name>`` (editable in the console from then on)."""
