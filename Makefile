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

# pytest exits 5 when it collected no tests: that is a failure too, said plainly.
test: $(STAMP)
	$(BIN)/python -m pytest -q; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; \
	exit $$status

# The whole rig: the simulator, gamerigd and its four services, playing until Ctrl-C.
demo: $(STAMP)
	$(BIN)/gamerigctl rig-demo $(DEMO_ARGS)

# The AI alone, headless games in the terminal.
headless-demo: $(STAMP)
	$(BIN)/gamerigctl demo $(DEMO_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
