# Two commands on a fresh machine: `make demo` (the local demo) and `make test` (the test suite).
# Python 3.12, as deployed (the functions' runtime is python312): the first interpreter found.
PYTHON ?= $(firstword $(foreach p,python3.12 $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) /usr/local/bin/python3.12 /usr/bin/python3.12,$(shell $(p) -c 'import sys; assert sys.version_info[:2] == (3, 12); print("$(p)")' 2>/dev/null)))
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | cksum | cut -d' ' -f1)-py312

.PHONY: demo up test lint table clean deploy bench browser society

$(STAMP): requirements.txt requirements-dev.txt
	@test -n "$(PYTHON)" || { echo "Python 3.12 is needed (the deployed runtime is python312): install it, or make PYTHON=/path/to/python3.12"; exit 2; }
	@echo "Creating $(VENV) with $(PYTHON) and installing requirements ..."
	@if [ -x $(BIN)/python ] && ! $(BIN)/python -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then rm -rf $(VENV); fi
	@rm -f $(VENV)/.installed-*
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $(STAMP)

demo: $(STAMP)  ## run the local demo: emulators, runtime, 3 agents through the demo template
	$(BIN)/python -m emulator demo

society: $(STAMP)  ## a small agent society live on the scripted model: make society [ARGS="--agents 30 --days 8"]
	$(BIN)/python -m tools.society demo $(ARGS)

up: $(STAMP)  ## emulators, runtime, console and live log until Ctrl-C: make up [ARGS="--import data --export-on-exit data"]
	$(BIN)/python -m emulator up $(ARGS)

# one worker more than cores: the tests wait on emulators, subprocesses and deliberate pauses
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: $(STAMP) browser  ## the whole test suite, a pytest worker per core plus one, each with its own emulators: make test [TEST_WORKERS=1]
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

# The console's browser test drives Debian's chromium through chromium-driver (Selenium); a
# browser downloaded at run time (Playwright, Selenium Manager) would need the internet.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  echo "Installing chromium and chromium-driver (apt) for the console's browser test ..."; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }

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
