"""Longer examples of the book, one module per chapter topic.

The chapters include them with `--8<-- "examples/<file>.py:<section>"`, and
`tests/examples/` checks them against torch.fx, so what the book shows runs.
"""
