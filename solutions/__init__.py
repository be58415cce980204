"""The exercises, solved; the project's own test run grades these."""
