"""The agent society from outside: ``python -m tools.society`` (create, follow, intervene,
export), and ``client`` for the tests and the benchmark."""
