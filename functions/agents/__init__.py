"""Agent logic the triggers call: progression through stages, model calls, cohort locks."""
