# Folio developer commands. `make test` is the README's test command and what CI runs.
VENV ?= .venv
PY := $(VENV)/bin/python
VLLM_VENV ?= $(or $(FOLIO_VLLM_VENV),$(HOME)/.cache/folio/vllm-venv)

.PHONY: install train-env vllm-env lint test bench

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# The `folio[train]` extra (torch, TRL, PEFT) for `folio train-dpo` and its tests; the
# torchvision wheel of the test machines needs the same import patch as the vLLM venv.
train-env: $(VENV)/.train-installed

$(VENV)/.train-installed: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[dev,train]'
	$(PY) tests/vllm_cpu/patch_torchvision.py
	touch $@

vllm-env:
	bash tests/vllm_cpu/setup_env.sh
	$(VLLM_VENV)/bin/python tests/vllm_cpu/build_tiny_model.py

lint: install
	$(VENV)/bin/ruff check app workers tests bench migrations
	$(VENV)/bin/ruff format --check app workers tests bench migrations
	$(VENV)/bin/mypy

test: install train-env vllm-env
	$(PY) -m pytest

bench: install vllm-env
	$(PY) -m bench
