"""The agent society on triggers: setup, a day's turns, its close, the watchdog (see
shared/society for the documents and rules, README "The agent society" for its use)."""
