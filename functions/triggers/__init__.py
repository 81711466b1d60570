"""Trigger handlers, one module per trigger family; the registry maps functions to them."""
