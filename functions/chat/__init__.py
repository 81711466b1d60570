"""Chat agents: fan-out of chat messages to agent turns, the turn itself (gates, model call,
typing delay, election), readiness to end, discussion threads and opening messages."""
