# Quick start: `make demo` runs the main job on the embedded default; `make test` runs the suite.
# Both create .venv at the repo root and install ddlab into it first.
# `make check` is the fast tier for your own loop (once .venv exists); its goal is 90 s on 2 cores
# (75.7-76.6 s for 9118-9124 tests in five fresh clones on the 2-core VM of 2026-12-07 night, Intel Xeon; 105.8-113.6 s
# for 9236 late that night with the VM slower, 148.5-167.7 s for 9322-9325 on 2026-12-08; every earlier run's
# figure: docs/performance.md).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ddlab-installed
# The venv's IPython kernels keep their own log quiet (their start-up warning about TCP on
# loopback and the KeyboardInterrupt line papermill's shutdown provokes read as failures);
# ddlab run passes the same setting on its command line.
KERNEL_QUIET := $(VENV)/etc/ipython/ipython_kernel_config.json
# The suite starts hundreds of Python processes (servers, kernels, CLI calls): each would
# compile ddlab's modules again, and pytest rewrite the test modules in each worker, where
# the environment says not to write bytecode (PYTHONDONTWRITEBYTECODE); the tests write
# it (into the ignored __pycache__/ folders).
# pip installs without compiling (--no-compile: 35 s instead of 103 s on 2 cores, most of it
# bytecode for modules nothing imports); what runs compiles what it imports, once. The venv's
# own pip (23.2 with Python 3.11) is first replaced by a pinned newer one, which reads the
# indexes' pages faster: the whole install 33.2 s against 42.5 s, wall medians of 4 pairs
# (CPU 21.7 against 31.0 s; 2026-12-07, docs/performance.md).
RUN := PYTHONDONTWRITEBYTECODE=
PYTEST := $(RUN) $(BIN)/python -m pytest
# Test workers: the suite waits on servers and hosts much of the time, so two per core
# (six were tried, 2026-12-02: the cores stayed a third idle, each test ran 1.6 times as
# long, and make check took 102 s where four took 84 s; three, 2026-12-06, paired with four 3 times:
# wall 1.053x (1.012-1.060), less CPU but fewer waits overlapped; five for the whole suite, 2026-12-06: 628.0 s
# against four's 610.6 s, 61 core-s more spent than the 22 idle ones it filled).
WORKERS ?= 4
# More flags for `make lab`, such as LABFLAGS="--no-browser --port=8899".
LABFLAGS ?=

.PHONY: venv demo check test lab hostdeps clean

venv: $(STAMP) $(KERNEL_QUIET)

$(KERNEL_QUIET): | $(STAMP)
	mkdir -p $(@D)
	echo '{"IPKernelApp": {"log_level": "CRITICAL"}}' > $@

$(STAMP): pyproject.toml
	@echo "installing ddlab and its dependencies into $(VENV) (1-2 minutes on a fresh machine)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check pip==26.3
	$(BIN)/pip install --quiet --disable-pip-version-check --no-compile -e '.[test]'
	touch $@

demo: venv
	$(RUN) $(BIN)/ddlab demo

# Every layer's unit tests and a smoke test per layer: no reliability, load or slow tests.
check: venv
	$(PYTEST) -q -m "not slow and not reliability" -n $(WORKERS) --dist worksteal

# Everything; the real-host tests need sshd and systemd tools, the Slurm tests slurm-wlm + munge,
# the browser tests Chromium:
# hostdeps installs them (as root with apt-get; where it cannot, those tests skip and say why).
# The venv (pip) and hostdeps (apt-get) install side by side: each mostly waits on downloads.
test:
	@$(MAKE) --no-print-directory -j2 venv hostdeps
	$(PYTEST) -n $(WORKERS) --dist worksteal --durations=15

hostdeps:
	@sh tests/testhost/install-deps.sh
	@sh tests/testhost/install-slurm.sh
	@sh tests/report/install-chromium.sh

# JupyterLab at the repo root, so notebooks/ and outputs/ are both in reach; root needs --allow-root.
lab: venv
	$(RUN) $(BIN)/jupyter lab --ServerApp.root_dir='$(CURDIR)' $(if $(filter 0,$(shell id -u)),--allow-root) $(LABFLAGS)

clean:
	rm -rf $(VENV) build lib/*.egg-info .pytest_cache
