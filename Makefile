# raystudy: two commands on a fresh machine -- `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
export PYTHONUNBUFFERED := 1

.PHONY: demo test test-fast lint install postgres browser clean

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

# The edit-test loop: no Ray, no cluster -- the algorithms, the contract and its claims,
# configuration, results and report, the layers (docs/architecture.md). A few minutes.
FAST_TESTS := tests/algorithms tests/test_claims.py tests/test_contract_types.py \
	tests/test_architecture.py tests/test_docs_pages.py tests/platform/test_config.py \
	tests/platform/test_spaces.py tests/platform/test_show.py tests/platform/test_results.py \
	tests/platform/test_report.py tests/platform/test_storage.py tests/platform/test_progress.py \
	tests/platform/test_context.py tests/platform/test_preflight.py tests/test_results_frame.py \
	tests/studies/test_graph_transfer_summary.py tests/studies/test_plasticity_curves.py \
	tests/studies/test_contrastive_imitation_comparison.py
test-fast: install
	RAYSTUDY_NO_RAY=1 $(PY) -m pytest -q -m "not ray and not cluster" $(FAST_TESTS)

# ruff; mypy over the contract and every study written on it (pyproject.toml: [tool.mypy]);
# import-linter over the layers (pyproject.toml: [tool.importlinter], docs/architecture.md)
lint: install
	$(VENV)/bin/ruff check raystudy tests bench examples
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

clean:
	rm -rf runs .pytest_cache
