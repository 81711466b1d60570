"""Local trigger runtime: the real Firestore and Pub/Sub emulators driving the functions in-process.

Entry point: ``emulator.runtime.LocalRuntime``; ``python -m emulator`` runs it interactively.
"""
