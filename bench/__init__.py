"""Benchmark of the local stack: ``python -m bench`` (see bench/RESULTS.md).

Not part of the test suite: it measures, it does not assert. Every section runs the real functions
through ``emulator.runtime.LocalRuntime`` on the real Firestore and Pub/Sub emulators.
"""
