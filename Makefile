# Two entry points, both self-contained on a fresh machine: `make run`, `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test

.PHONY: run test typecheck venv testenv browser sshd nodetools clean gpucheck gpu-wheelhouse

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

# The pinned circom and snarkjs for the circuit tests (package-lock.json), reinstalled when the
# lock is newer than node_modules.
NODESTAMP := node_modules/.package-lock.json
$(NODESTAMP): package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm missing: apt-get install nodejs npm (the circom tests will skip)"; exit 0; }; \
	  npm ci --no-audit --no-fund && touch $@
nodetools: $(NODESTAMP)

run: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py runprover --demo

# Static checks: mypy with django-stubs over vastmanager, statuspanel and gpu_engine (pyproject.toml's
# [tool.mypy]: strict on the tracker, the engine, the wire and the panel; the rest at the defaults).
typecheck: testenv
	$(PY) -m mypy

test: testenv browser sshd nodetools
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

clean:
	rm -rf $(VENV) data test-artifacts node_modules .cache/circom-fixtures
