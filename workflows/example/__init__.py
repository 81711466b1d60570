"""The example workflow: extract the user's name, topic and question, then answer it."""
