# `make demo` and `make test` each create .venv when missing and install the pinned stack once;
# a second run skips the install unless pyproject.toml or requirements.lock changed.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

export HF_HUB_DISABLE_TELEMETRY := 1

.PHONY: install demo test test-all docs lint clean gpu-wheels

$(STAMP): pyproject.toml requirements.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing the pinned stack into $(VENV) (about 3 minutes the first time)"
	$(PY) -m pip install -q --disable-pip-version-check torch==2.14.1 torchvision==0.29.1
	$(PY) -m pip install -q --disable-pip-version-check -c requirements.lock -e ".[dev,docs,hub,logging,perception,robot,driving,cad,demo]"
	@touch $(STAMP)

install: $(STAMP)

demo: install
	$(PY) -m domains.gui.demo

# one worker per core (pytest-xdist; the suite is CPU-bound), each test file on one worker so its module fixtures
# are built once; tests/conftest.py hands the longest files out first so that neither worker finishes alone
# (tests/conftest.py sends the whole of tests/demo to one worker: its five demo servers start once, not twice)
test: install
	$(PY) -m pytest -q -n auto --dist loadfile

# The documentation site into site/ (warnings are errors; model pages come from the registry).
docs: install
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

test-all: install
	$(PY) -m pytest -q -n auto --dist loadfile -m "not gpu and not network"

# Wheels the GPU machines' image lacks, pinned by requirements.lock, into .whl/ (ignored), for the device call
# that runs bench/gpu_suite.sh (its header has the call); fails when tree + wheels exceed the 64 MiB carry budget.
gpu-wheels:
	PYTHON=$(PYTHON) bench/gpu_suite.sh --collect-wheels

# .venv-verl (ignored): verl 0.9.1 + the zoo pinned by requirements-verl.lock, for `pytest -m verl tests/verl`
# (docs/guides/verl.md). A venv of its own: verl pins transformers<5.11. torch comes as for .venv.
.venv-verl/.installed: pyproject.toml requirements-verl.lock
	@test -x .venv-verl/bin/python || $(PYTHON) -m venv .venv-verl
	.venv-verl/bin/python -m pip install -q --disable-pip-version-check torch==2.14.1 torchvision==0.29.1
	.venv-verl/bin/python -m pip install -q --disable-pip-version-check -c requirements-verl.lock -e ".[verl,dev,perception,robot,driving]"
	@touch $@

.PHONY: verl-env
verl-env: .venv-verl/.installed

clean:
	rm -rf $(VENV) outputs .pytest_cache site
