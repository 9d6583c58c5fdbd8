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

.PHONY: lab test setup unit notebooks bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@if [ ! -x "$(PY)" ]; then \
	  if $(PYTHON) -c "import torch" >/dev/null 2>&1; then \
	    echo "nbbench: reusing the torch of $(PYTHON) ($$($(PYTHON) -c 'import torch;print(torch.__version__)'))"; \
	    $(PYTHON) -m venv --system-site-packages $(VENV); \
	  else \
	    $(PYTHON) -m venv $(VENV); \
	  fi; \
	fi
	@if $(PY) -c "import torch" >/dev/null 2>&1; then \
	  echo "nbbench: torch $$($(PY) -c 'import torch;print(torch.__version__)') is already there; not reinstalling it"; \
	else \
	  echo "nbbench: installing $(TORCH_SPEC)"; \
	  $(PY) -m pip install -q "$(TORCH_SPEC)"; \
	fi
	$(PY) -m pip install -q -e '.[test]'
	@touch $(STAMP)

lab: setup
	$(BIN)/jupyter lab --notebook-dir=notebooks 01-quickstart.ipynb

unit: setup
	MPLBACKEND=Agg $(PY) -m pytest -q $(PYTEST_ARGS)

notebooks: setup
	@home=$$(mktemp -d); \
	NBBENCH_HOME=$$home MPLBACKEND=Agg $(PY) -m pytest -q --nbmake --nbmake-timeout=$(NB_TIMEOUT) notebooks/; \
	rc=$$?; rm -rf $$home; exit $$rc

test: unit notebooks

bench: setup
	@for f in bench/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
