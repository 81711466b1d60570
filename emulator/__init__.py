"""Local trigger runtime: the real Firestore and Pub/Sub emulators driving the functions in-process.

Entry point: ``emulator.runtime.LocalRuntime``; ``python -m emulator`` runs it interactively.
Importing it meters the functions' Firestore client (``metering``).
"""

from emulator import metering as metering  # registers the client's metering
