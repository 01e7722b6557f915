# `make demo` and `make test` each create .venv when missing and install the pinned stack once;
# a second run skips the install unless pyproject.toml or requirements.lock changed.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

export HF_HUB_DISABLE_TELEMETRY := 1

.PHONY: install demo test test-all lint clean

$(STAMP): pyproject.toml requirements.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing the pinned stack into $(VENV) (about 3 minutes the first time)"
	$(PY) -m pip install -q --disable-pip-version-check torch==2.14.1 torchvision==0.29.1
	$(PY) -m pip install -q --disable-pip-version-check -c requirements.lock -e ".[dev,hub,logging,perception,robot,driving,cad]"
	@touch $(STAMP)

install: $(STAMP)

demo: install
	$(PY) -m domains.gui.demo

test: install
	$(PY) -m pytest -q

test-all: install
	$(PY) -m pytest -q -m "not gpu and not network"

clean:
	rm -rf $(VENV) outputs .pytest_cache
