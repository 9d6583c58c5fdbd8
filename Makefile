# nbbench — the two commands: `make lab` and `make test`.
#
# Set-up (shared by both): create .venv if missing.  Where the system python
# already imports torch (a PyTorch image), the venv sees the system packages and
# that torch is reused, never reinstalled.  Elsewhere torch is installed first,
# pinned ($(TORCH_SPEC)), so pip takes the build on this machine's disk instead of
# resolving a bare `torch` to a multi-GB CUDA build.

PYTHON      ?= python3
VENV        ?= .venv
TORCH_SPEC  ?= torch==2.13.0
BIN         := $(VENV)/bin
PY          := $(BIN)/python
STAMP       := $(VENV)/.nbbench-installed
NB_TIMEOUT  ?= 300
PYTEST_ARGS ?=
# pytest-xdist workers for the unit suite (0: none, in one process); tests that must not run
# side by side share an xdist group (tests/conftest.py: XDIST_GROUPS) and run on one worker
JOBS        ?= 2

.PHONY: lab test setup unit notebooks stress-test bench gpu-check clean docs reference notebooks-outputs lint \
	labextension lint-ts dist smoke-wheel

setup: $(STAMP)

$(STAMP): pyproject.toml tools/setup-venv.sh
	bash tools/setup-venv.sh "$(PYTHON)" "$(VENV)" "$(TORCH_SPEC)"
	@touch $(STAMP)

# JupyterLab listens on 127.0.0.1 with a token; as root (usual in containers) it needs
# --allow-root.  tools/lab.sh prints a short banner first: the link with its token, the
# notebook to open, the `ssh -L 8888:127.0.0.1:8888 HOST` line, how to stop it.
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: setup
	@bash tools/lab.sh "$(BIN)/jupyter" $(LAB_ARGS)

unit: setup
	MPLBACKEND=Agg $(PY) -m pytest -q -rfE $(if $(filter-out 0,$(JOBS)),-n $(JOBS) --dist loadgroup) $(PYTEST_ARGS)

notebooks: setup
	@home=$$(mktemp -d); \
	NBBENCH_HOME=$$home MPLBACKEND=Agg $(PY) -m pytest -q --nbmake --nbmake-timeout=$(NB_TIMEOUT) notebooks/; \
	rc=$$?; rm -rf $$home; exit $$rc

# the unit suite and the notebooks side by side (CI runs this through .ci/run); fails when either
# fails or runs no test
test: setup
	@bash tools/run-tests.sh "$(PY)" "$(JOBS)" "$(NB_TIMEOUT)" $(PYTEST_ARGS)

# the unit suite three times beside two busy loops, NBBENCH_STRESS=1 (more random cases):
# failures per round.  Not for CI; run it on a machine no one else is measuring on.
stress-test: setup
	@bash tools/stress-test.sh "$(PY)" "$(JOBS)" $(PYTEST_ARGS)

bench: setup
	@for f in bench/*.py; do \
	  case $$f in bench/_*|bench/gpu_check.py) continue;; esac; \
	  echo "== $$f"; $(PY) $$f || exit 1; done

# The GPU validation kit: every GPU path of nbbench run for real, one line per check (about
# 3 minutes on one GPU, at most 4); without CUDA it lists what it would run and exits 0.
# GPU_CHECK_ARGS: e.g. --only gpu,monitor --json gpu-check.json --artifacts gpu-check/
GPU_CHECK_ARGS ?=
gpu-check: setup
	PYTHONPATH=. $(PY) bench/gpu_check.py $(GPU_CHECK_ARGS)

# The documentation site (mkdocs-material, mkdocs.yml): built into site/ with warnings as
# errors.  Needs only the docs extra: no torch and no test extra (a venv made by this target
# has just that); the tutorials are rendered with their committed outputs, never executed.
# `make reference` rewrites docs/reference/ from the code (tests/test_docs.py fails when it is
# stale); `make notebooks-outputs` re-runs every tutorial and keeps its outputs (a few minutes of CPU).
DOCS_STAMP := $(VENV)/.nbbench-docs-installed

$(DOCS_STAMP): pyproject.toml
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[docs]'
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	@start=$$(date +%s); NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site -q && \
	echo "docs: site/ built with --strict in $$(( $$(date +%s) - start )) s"

reference: setup
	PYTHONPATH=. $(PY) tools/gen_reference.py

notebooks-outputs: setup
	PYTHONPATH=. MPLBACKEND=Agg $(PY) tools/notebook_outputs.py

LABEXT_MODULES := labextension/node_modules/.installed

# Style: ruff (configured in pyproject.toml); CI runs it, and so does pre-commit.  The
# lab extension's TypeScript: type-checked (tsc --noEmit) and prettier-checked (`make lint-ts`,
# part of `make lint` where Node.js is installed; CI installs it).
lint: setup
	$(PY) -m ruff check nbbench tests tools bench
	$(PY) -m ruff format --check nbbench tests tools bench
	@if command -v node >/dev/null 2>&1; then $(MAKE) --no-print-directory lint-ts; \
	else echo "lint: no Node.js here: the TypeScript is not checked (CI checks it)"; fi

lint-ts: $(LABEXT_MODULES)
	cd labextension && node_modules/.bin/tsc --noEmit && \
	  node_modules/.bin/prettier --check "src/**/*.ts" "style/**/*.css" "schema/*.json"

# The JupyterLab extension (labextension/, TypeScript) built with jlpm and @jupyterlab/builder
# into nbbench/labextension/ (not committed); the wheel ships it as shared data.  Needs Node.js.
$(LABEXT_MODULES): labextension/package.json labextension/yarn.lock | $(STAMP)
	cd labextension && ../$(BIN)/jlpm install --mode=skip-build >/dev/null
	@touch $@

LABEXT_BUILT := nbbench/labextension/package.json
labextension: $(LABEXT_BUILT)

$(LABEXT_BUILT): $(LABEXT_MODULES) labextension/tsconfig.json $(wildcard labextension/src/*.ts labextension/style/* labextension/schema/*)
	bash tools/build-labextension.sh $(PY)

# sdist and wheel (the extension's build inside) into dist/, then the wheel installed into a
# fresh venv and checked: the CLI, %load_ext in a kernel, both extensions listed as enabled
dist: labextension
	rm -rf dist && $(PY) -m build --outdir dist . >/dev/null && ls -l dist

smoke-wheel: dist
	PYTHON=$(PYTHON) bash tools/smoke-wheel.sh dist/nbbench-*.whl

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache site nbbench/labextension labextension/lib labextension/node_modules
