# Two entry points, both self-contained on a fresh machine: `make run`, `make test`.
# Between two edits, `make check`: the quick tier (see below and the README).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test

.PHONY: run test check types venv testenv browser sshd promtool nodetools clean gpucheck gpu-wheelhouse

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PIP) install -q -e .
	touch $@

$(TSTAMP): pyproject.toml | $(PY)
	$(PIP) install -q -e '.[test]'
	touch $@ $(STAMP)

venv: $(STAMP)
testenv: $(TSTAMP)

# Debian's Chromium for the browser tests (a test tool's own browser download fails here).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo "chromium missing: apt-get install chromium (browser tests will fail)"; fi; }

# Debian's OpenSSH server for the fleet's network-namespace tests (an SSH source in front of a status
# port); the tests run it as a plain process with a key and config they generate, never as a service.
sshd:
	@test -x /usr/sbin/sshd || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server >/dev/null; \
	  else echo "sshd missing: apt-get install openssh-server (the SSH fleet test will skip)"; fi; }

# Debian's Prometheus for promtool: the alert rules in docs/prometheus-alerts.yml are checked with it.
promtool:
	@command -v promtool >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
	  else echo "promtool missing: apt-get install prometheus (the alert-rules test will skip)"; fi; }

# The pinned circom and snarkjs for the circuit tests (package-lock.json), reinstalled when the
# lock is newer than node_modules.
NODESTAMP := node_modules/.package-lock.json
$(NODESTAMP): package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm missing: apt-get install nodejs npm (the circom tests will skip)"; exit 0; }; \
	  npm ci --no-audit --no-fund && touch $@
nodetools: $(NODESTAMP)

# `make run BIND=127.0.0.1:8080`: the panel's and API's address (HOST:PORT).
BIND ?= 127.0.0.1:8000

run: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py runprover --demo --bind $(BIND)

test: testenv browser sshd promtool nodetools
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m pytest $(PYTEST_ARGS)

# The lent GPU machine (docs/GPU.md). `gpu-wheelhouse` runs here, with the package registries: it fills
# wheelhouse/ (ignored) with CPython 3.12 wheels of what the GPU tests import and the PyCUDA sdist.
# `gpucheck` runs there, offline, under the machine's own Python (no venv of ours needed to start):
# without a GPU it says so and exits 0; GPUCHECK_ARGS="--report PATH" puts the report elsewhere.
gpu-wheelhouse: testenv
	$(PY) -m gpu_engine.gpucheck wheelhouse --dir wheelhouse

gpucheck:
	$(PYTHON) -m gpu_engine.gpucheck check --wheelhouse wheelhouse $(GPUCHECK_ARGS)

# The quick tier, under 5 minutes: lint, types, and the tests that need no browser, no network
# namespaces, no chaos and no long server runs (markers in pyproject.toml). `make test` stays the
# whole suite (CI runs it).
QUICK := not browser and not netns and not chaos and not slow
check: testenv
	$(PY) -m ruff check .
	@$(MAKE) --no-print-directory types
	$(PY) -m pytest -q -m "$(QUICK)" $(PYTEST_ARGS)

# Static types: the hook `check` calls; it runs mypy once pyproject.toml configures it.
types: testenv
	$(PY) -m mypy

clean:
	rm -rf $(VENV) data test-artifacts node_modules .cache/circom-fixtures
