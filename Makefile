# Quick start: `make demo` runs the main job on the embedded default; `make test` runs the suite.
# Both create .venv at the repo root and install ddlab into it first.
# `make check` is the fast tier for your own loop (once .venv exists): under 90 s on 2 cores.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ddlab-installed
PYTEST := $(BIN)/python -m pytest
# Test workers: the suite waits on servers and hosts much of the time, so two per core.
WORKERS ?= 4

.PHONY: venv demo check test lab hostdeps clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@echo "installing ddlab and its dependencies into $(VENV) (1-2 minutes on a fresh machine)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

demo: venv
	$(BIN)/ddlab demo

# Every layer's unit tests and a smoke test per layer: no reliability, load or slow tests.
check: venv
	$(PYTEST) -q -m "not slow and not reliability" -n $(WORKERS) --dist worksteal

# Everything; the real-host tests need sshd and systemd tools, which hostdeps installs.
test: venv hostdeps
	$(PYTEST) -n $(WORKERS) --dist worksteal --durations=15

hostdeps:
	@sh tests/testhost/install-deps.sh

lab: venv
	$(BIN)/jupyter lab --notebook-dir=notebooks

clean:
	rm -rf $(VENV) build lib/*.egg-info .pytest_cache
