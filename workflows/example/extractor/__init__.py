"""Extracts the name, topic and question from the user's query."""
