"""Answers the extracted question."""
