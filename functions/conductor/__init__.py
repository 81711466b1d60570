"""Conductor workflows on triggers: each step a document and a Pub/Sub turn (shared/conductor)."""
