"""Graders: one pytest module per exercise, run against `solutions/` or `exercises/`."""
