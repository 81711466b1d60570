"""Deliberate Lab's REST API v1 (docs/API.md): the ``api`` HTTP function of the registry."""
