# Quick start: `make demo` runs the main job on the embedded default; `make test` runs the suite.
# Both create .venv at the repo root and install ddlab into it first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ddlab-installed

.PHONY: venv demo test lab hostdeps clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

demo: venv
	$(BIN)/ddlab demo

# The real-host tests need sshd and systemd tools; hostdeps installs them when it can.
test: venv hostdeps
	$(BIN)/python -m pytest

hostdeps:
	@sh tests/testhost/install-deps.sh

lab: venv
	$(BIN)/jupyter lab --notebook-dir=notebooks

clean:
	rm -rf $(VENV) build lib/*.egg-info .pytest_cache
