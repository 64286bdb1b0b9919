"""Observing a run: its events and where they come from, the console, the report, the pictures and the spans."""
