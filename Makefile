# raystudy: two commands on a fresh machine -- `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
export PYTHONUNBUFFERED := 1

.PHONY: demo test lint install postgres browser clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# The pinned CPU build lies on these machines; a looser spec pulls a multi-GB CUDA build.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

# A PostgreSQL server for the --optuna-storage postgresql:// tests (Debian's package, where
# root can install it); never fails: without one those tests skip.
postgres:
	@bash .ci/postgres.sh

# Headless Chromium and ChromeDriver (Debian's) for the report's browser test; never fails.
browser:
	@bash .ci/chromium.sh

demo: install
	$(VENV)/bin/raystudy sweep optimizer_robustness --profile quick --space demo

test: lint postgres browser
	$(PY) -m pytest -q tests

# ruff, and mypy over the contract and every study written on it (pyproject.toml: [tool.mypy])
lint: install
	$(VENV)/bin/ruff check raystudy tests bench examples
	$(VENV)/bin/mypy

clean:
	rm -rf runs .pytest_cache
