"""Local trigger runtime: the real Firestore and Pub/Sub emulators driving the functions in-process.

Entry point: ``emulator.runtime.LocalRuntime``; ``python -m emulator`` runs it interactively.
Importing the package imports nothing else, so a command that only parses its arguments
(``python -m emulator --help``, the benchmarks' ``emulator.config``) stays light; a function run
locally is metered by ``emulator.invoker``, which registers ``metering``.
"""
