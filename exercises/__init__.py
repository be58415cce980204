"""Exercise stubs that students fill in; `make grade` runs the graders on them."""
