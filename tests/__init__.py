"""The minifx test suite: tests per stage, graders per exercise, and the grading tool."""
