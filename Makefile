# make test / make demo work from a fresh clone with only Python 3.11 and the package registries.
# The interpreter: PYTHON if given, else python3.11, else python3; it must be 3.11 or newer.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Extra options for the demos, e.g. make demo DEMO_ARGS="--level 8",
# make headless-demo DEMO_ARGS="--preview --player dellacherie"
DEMO_ARGS ?=

.PHONY: test demo headless-demo venv clean

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "make: no python3.11 or python3 found; gamerig needs Python 3.11 or newer" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "make: gamerig needs Python 3.11 or newer, $(PYTHON) is " + sys.version.split()[0] + "; run make PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# Two runs: the tests that keep no real time (the unit tests, and the integration tests marked
# off_the_clock) over every core, work stealing so the few long ones do not queue behind each
# other; then the real_time ones (processes against deadlines) one at a time.  Both run; the
# first failure is the exit code.  pytest exits 5 when it collected no tests: a failure too.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto --dist worksteal -m "not real_time"; parallel=$$?; \
	$(BIN)/python -m pytest -q -m real_time; alone=$$?; \
	for status in $$parallel $$alone; do \
		if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; \
		if [ $$status -ne 0 ]; then exit $$status; fi; \
	done

# The whole rig: the simulator, gamerigd and its four services, playing until Ctrl-C.
demo: $(STAMP)
	$(BIN)/gamerigctl rig-demo $(DEMO_ARGS)

# The AI alone, headless games in the terminal.
headless-demo: $(STAMP)
	$(BIN)/gamerigctl demo $(DEMO_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
