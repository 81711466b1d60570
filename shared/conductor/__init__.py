"""Conductor workflows (Diskurs' concepts): multi-step agents with typed Jinja2 prompts, reply
validation, ``is_final`` hand-backs, and a conductor with a long-term memory.

Pure domain code: documents, the workflow's configuration, prompt arguments, rendering, routing
and memory. Firestore, the model call and the triggers live in ``functions/conductor``.
"""
