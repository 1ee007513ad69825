# Folio developer commands. `make test` is the README's test command and what CI runs.
# The venvs install with the image's pins (deploy/docker/constraints.txt): the tests run the
# versions the image ships.
VENV ?= .venv
PY := $(VENV)/bin/python
VLLM_VENV ?= $(or $(FOLIO_VLLM_VENV),$(HOME)/.cache/folio/vllm-venv)

.PHONY: install train-env vllm-env olmocr-env lint test bench docs docs-reference docs-pictures docs-screenshots

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c deploy/docker/constraints.txt -e '.[dev,docs]'
	touch $@

# The `folio[train]` extra (torch, TRL, PEFT) for `folio train-dpo` and its tests, and
# `folio[scan]` (RapidOCR) for the second scan reader's; the
# torchvision wheel of the test machines needs the same import patch as the vLLM venv.
# It installs every extra in one pip call (one resolve, one editable build; CI's clean clone
# runs it first) and so counts as `install` too.
train-env: $(VENV)/.train-installed

$(VENV)/.train-installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c deploy/docker/constraints.txt -e '.[dev,docs,train,scan]'
	$(PY) tests/vllm_cpu/patch_torchvision.py
	touch $(VENV)/.installed $@

vllm-env:
	bash tests/vllm_cpu/setup_env.sh
	$(VLLM_VENV)/bin/python tests/vllm_cpu/build_tiny_model.py

# olmOCR's own pipeline (olmocr 0.4.27 from PyPI, no GPU extra) for `python -m bench
# scale-olmocr` and its test, in a venv of its own.
olmocr-env:
	bash bench/olmocr_pipeline_env.sh

lint: install
	$(VENV)/bin/ruff check app workers tests bench migrations docsgen
	$(VENV)/bin/ruff format --check app workers tests bench migrations docsgen
	$(VENV)/bin/mypy

# The documentation site: the generated references must match the code (CLI, settings, API),
# then a strict build (a broken link, anchor or missing page fails). Output in site/.
docs: install
	$(PY) -m docsgen check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# After adding a command, an option, a setting or a route: rewrite the generated references.
docs-reference: install
	$(PY) -m docsgen write

# The pictures (SVG) from committed runs; the detector's needs `python -m bench detector` first.
docs-pictures: install
	$(PY) -m docsgen pictures

# The HTML report's screenshots, taken in headless Chromium (apt-get install -y chromium).
docs-screenshots: install
	$(PY) -m docsgen screenshots

# Two workers (pytest-xdist): one runs the vLLM tests, the other the rest beside it
# (tests/conftest.py groups them); many tests wait on servers and subprocesses.
test: train-env vllm-env olmocr-env
	$(PY) -m pytest -n 2 --dist loadgroup --no-loadscope-reorder

bench: install vllm-env
	$(PY) -m bench
