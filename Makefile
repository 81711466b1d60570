# Two commands on a fresh machine: `make demo` (the local demo) and `make test` (the test suite).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | cksum | cut -d' ' -f1)

.PHONY: demo up test lint table clean deploy bench

$(STAMP): requirements.txt requirements-dev.txt
	@echo "Creating $(VENV) and installing requirements ..."
	@rm -f $(VENV)/.installed-*
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $(STAMP)

demo: $(STAMP)  ## run the local demo: emulators, runtime, 3 agents through the demo template
	$(BIN)/python -m emulator demo

up: $(STAMP)  ## start the emulators and the runtime until Ctrl-C
	$(BIN)/python -m emulator up

test: $(STAMP)  ## the whole test suite (starts the emulators itself)
	$(BIN)/python -m pytest

bench: $(STAMP)  ## the benchmark (not part of the tests): about 10 minutes, writes bench/results.json
	$(BIN)/python -m bench $(ARGS)

lint: $(STAMP)  ## ruff (lint and format) and mypy
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

table: $(STAMP)  ## print the README's function table from the registry
	$(BIN)/python -m functions.registry

deploy: $(STAMP)  ## deploy to Google Cloud: make deploy PROJECT=p REGION=r [DRY_RUN=1] [ARGS=...]
	@test -n "$(PROJECT)" -a -n "$(REGION)" || { echo "usage: make deploy PROJECT=p REGION=r [DRY_RUN=1]"; exit 2; }
	$(BIN)/python -m tools.deploy --project $(PROJECT) --region $(REGION) $(if $(DRY_RUN),--dry-run) $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
