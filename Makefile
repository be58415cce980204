# minifx: every target bootstraps .venv by itself, so a fresh clone needs only `make test`.
#
#   make book          build the book and serve it on http://127.0.0.1:8000
#   make test          the whole test suite (unit, differential, graders on the solutions,
#                      book build, docs examples, stub checks) with coverage >= 90%
#   make grade         grade exercises/ (CH=N for one chapter, RESULTS=path for Gradescope)
#   make book-build    strict build of the book into site/
#   make classroom     write .github/workflows/classroom.yml for GitHub Classroom (CH=N: one chapter)
#   make clean         remove the venv and every build output
#
# TORCH_SPEC pins the CPU build by default; for a CUDA build, for example:
#   make test TORCH_SPEC="torch==2.13.0" TORCH_INDEX_URL=https://download.pytorch.org/whl/cu126

PYTHON ?= python3
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX_URL ?=
BOOK_ADDR ?= 127.0.0.1:8000
CH ?=
RESULTS ?=

# mkdocs-material prints a banner about its successor on every build; the book does not need it.
export NO_MKDOCS_2_WARNING := 1

VENV := .venv
BIN := $(VENV)/bin
# The stamp records that the venv matches pyproject.toml and this Makefile; editing
# either one reinstalls on the next target.
STAMP := $(VENV)/.minifx-installed

.PHONY: test grade classroom book book-build clean

test: $(STAMP)
	$(BIN)/python -m pytest --cov=minifx --cov-report=term-missing:skip-covered --cov-fail-under=90

# A report, not a gate: tests.grading exits 0 whatever the score, non-zero only if it breaks.
grade: $(STAMP)
	$(BIN)/python -m tests.grading --impl exercises $(if $(CH),--chapter $(CH)) $(if $(RESULTS),--results $(RESULTS))

classroom: $(STAMP)
	$(BIN)/python -m tests.classroom $(if $(CH),--chapter $(CH)) --out .github/workflows/classroom.yml

book: $(STAMP)
	$(BIN)/mkdocs serve -a $(BOOK_ADDR)

book-build: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) site build dist *.egg-info .pytest_cache .hypothesis .coverage .coverage.* htmlcov results.json
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)" $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@
