"""Deployable Cloud Functions: thin CloudEvent entry points and the agent logic they call."""
