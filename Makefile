# minifx: every target bootstraps .venv by itself, so a fresh clone needs only `make test`.
#
#   make book          build the book and serve it on http://127.0.0.1:8000
#   make test          the whole test suite (unit, differential, graders on the solutions,
#                      book build, docs examples, stub checks) with coverage >= 90%, in
#                      TEST_PROCESSES pytest processes (default 3)
#   make grade         grade exercises/, each exercise in its own time-limited process
#                      (CH=N one chapter, EX=2.1 one exercise, RESULTS=path Gradescope's results.json,
#                      VERBOSE=1 every message in full, TIMEOUT=seconds per exercise);
#                      TRACK=build grades the build tasks carved out of minifx/ instead (TRACK=all:
#                      both), TASK=1.2 one build task
#   make gradescope    write build/gradescope-autograder.zip, Gradescope's autograder (no solutions in it;
#                      TRACK=build or all: it grades the submission's minifx/ build tasks too)
#   make book-build    strict build of the book into site/
#   make student-release   write the course without solutions/ to RELEASE (default ../minifx-student);
#                      TASKS=all|chN|1.2,5.1 also carves those build tasks out of its minifx
#   make classroom     write .github/workflows/classroom.yml for GitHub Classroom (CH=N: one chapter;
#                      TRACK=build or all: the build tasks too)
#   make clean         remove the venv and every build output
#
# TORCH_SPEC pins the CPU build by default; for a CUDA build, for example:
#   make test TORCH_SPEC="torch==2.13.0" TORCH_INDEX_URL=https://download.pytorch.org/whl/cu126

# The Python the venv is made with: 3.11, the one pyproject.toml allows (see the README's
# "Tested versions"); python3 where no python3.11 is on the PATH.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || echo python3)
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX_URL ?=
BOOK_ADDR ?= 127.0.0.1:8000
# Mermaid (the book's diagrams) from the npm registry; mkdocs-material expects version 11.
MERMAID_VERSION ?= 11.12.2
# axe-core, the accessibility checker that tests/test_browser.py runs on every page, from
# the npm registry too; it is only a test's tool, so it lives in the venv, not in the book.
AXE_VERSION ?= 4.14.1
CH ?=
EX ?=
RESULTS ?=
VERBOSE ?=
TIMEOUT ?= 60
RELEASE ?= ../minifx-student
TASKS ?=
TASK ?=
TRACK ?=
# `make test` runs pytest in this many processes (pytest-xdist), each test file whole in
# one of them, so that a file's shared fixtures (the carving proof) run once. One more
# than the 2 cores of the machines we test on: about an eighth of the time a process
# waits (a hang's time limit, a sleep, a browser, a subprocess starting), and the third
# fills it (13:14 against 12:20 for the whole run on one machine).
TEST_PROCESSES ?= 3
comma := ,

# mkdocs-material prints a banner about its successor on every build; the book does not need it.
export NO_MKDOCS_2_WARNING := 1

VENV := .venv
BIN := $(VENV)/bin
# The stamp records that the venv matches pyproject.toml and this Makefile; editing
# either one reinstalls on the next target.
STAMP := $(VENV)/.minifx-installed
MERMAID_JS := chapters/assets/vendor/mermaid.min.js
AXE_JS := $(VENV)/axe-core/axe.min.js

.PHONY: test grade gradescope classroom student-release book book-build chromium clean

# In a student release (no solutions/), the tests are what a student can pass: the graders
# are left out of pytest (tests/conftest.py) and run afterwards as a report by `make grade`.
test: $(STAMP) $(MERMAID_JS) $(AXE_JS) chromium
	$(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder --cov=minifx --cov-report=term-missing:skip-covered --cov-fail-under=90
	@if [ ! -d solutions ]; then echo; echo "Your exercises, graded (a report: it never fails make test):"; $(MAKE) --no-print-directory grade; fi

# A report, not a gate: tests.grading exits 0 whatever the score, non-zero only if it breaks.
grade: $(STAMP)
	$(BIN)/python -m tests.grading --impl exercises --timeout $(TIMEOUT) $(if $(CH),--chapter $(CH)) $(if $(EX),--exercise $(EX)) $(if $(TRACK),--track $(TRACK)) $(foreach t,$(subst $(comma), ,$(TASK)),--task $(t)) $(if $(RESULTS),--results $(RESULTS)) $(if $(VERBOSE),--verbose)

gradescope: $(STAMP)
	$(BIN)/python -m tests.grading.gradescope build/gradescope-autograder.zip $(if $(TRACK),--track $(TRACK))

student-release: $(STAMP)
	$(BIN)/python -m tests.release $(RELEASE) $(if $(TASKS),--tasks "$(TASKS)")

classroom: $(STAMP)
	$(BIN)/python -m tests.classroom $(if $(CH),--chapter $(CH)) $(if $(TRACK),--track $(TRACK)) --out .github/workflows/classroom.yml

book: $(STAMP) $(MERMAID_JS)
	$(BIN)/mkdocs serve -a $(BOOK_ADDR)

book-build: $(STAMP) $(MERMAID_JS)
	$(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) $(dir $(MERMAID_JS)) site build dist *.egg-info .pytest_cache .ruff_cache .hypothesis .coverage .coverage.* htmlcov results.json
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)" $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@

# The book loads Mermaid from this file instead of a CDN (see mkdocs.yml), so diagrams
# render offline. Fetched from the npm registry, pinned; editing this Makefile refetches.
$(MERMAID_JS): Makefile
	@command -v npm >/dev/null || { echo "make: npm is needed to fetch Mermaid for the book's diagrams; install Node.js and npm (Debian: apt-get install npm)" >&2; exit 1; }
	rm -rf $(VENV)/mermaid && mkdir -p $(VENV)/mermaid $(dir $@)
	cd $(VENV)/mermaid && npm pack --silent mermaid@$(MERMAID_VERSION) >/dev/null && tar -xzf mermaid-$(MERMAID_VERSION).tgz package/dist/mermaid.min.js
	cp $(VENV)/mermaid/package/dist/mermaid.min.js $@

# The browser test runs axe-core (pinned, from the npm registry) in every page it opens.
# After $(STAMP), which may recreate the venv this file lives in.
$(AXE_JS): Makefile | $(STAMP)
	@command -v npm >/dev/null || { echo "make: npm is needed to fetch axe-core for the browser test; install Node.js and npm (Debian: apt-get install npm)" >&2; exit 1; }
	rm -rf $(dir $@) && mkdir -p $(dir $@)
	cd $(dir $@) && npm pack --silent axe-core@$(AXE_VERSION) >/dev/null && tar -xzf axe-core-$(AXE_VERSION).tgz package/axe.min.js && mv package/axe.min.js . && rm -rf package axe-core-$(AXE_VERSION).tgz
	touch $@  # npm dates the packed file 1985: newer than this Makefile, or it is fetched again

# The browser test (tests/test_browser.py) drives the system's Chromium with Playwright;
# it never downloads a browser. On a machine without Chromium where we are root and have
# apt-get, install Debian's package; elsewhere the browser test is skipped and says why.
chromium:
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Chromium from Debian's packages for the browser test"; \
	  apt-get install -y -q chromium >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; } || \
	  echo "could not install Chromium: the browser test will be skipped"; \
	else echo "no Chromium here (install Debian's chromium package): the browser test will be skipped"; fi

