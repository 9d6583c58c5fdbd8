#!/usr/bin/env bash
# Set-up shared by `make lab` and `make test`.
#   tools/setup-venv.sh PYTHON VENV TORCH_SPEC
# Creates VENV if missing.  Where PYTHON already imports torch (a PyTorch image),
# the venv is made with --system-site-packages and that torch is reused — never
# reinstalled.  Elsewhere torch is installed first, pinned (TORCH_SPEC), so pip
# does not resolve a bare `torch` to a multi-GB CUDA build.  Then nbbench itself,
# editable, with its test and notebook extras.
# NBBENCH_SETUP_DRY_RUN=1 prints the pip commands instead of running them (tests).
set -euo pipefail
PYTHON=${1:?python}; VENV=${2:?venv}; TORCH_SPEC=${3:?torch spec}

run() {
  if [ -n "${NBBENCH_SETUP_DRY_RUN:-}" ]; then echo "would run: $*"; else "$@"; fi
}
torch_version() { "$1" -c 'import torch; print(torch.__version__)' 2>/dev/null; }

if [ ! -x "$VENV/bin/python" ]; then
  if v=$(torch_version "$PYTHON"); then
    echo "nbbench: $PYTHON already has torch $v: making $VENV with --system-site-packages to reuse it"
    "$PYTHON" -m venv --system-site-packages "$VENV"
  else
    "$PYTHON" -m venv "$VENV"
  fi
fi
PY="$VENV/bin/python"
if v=$(torch_version "$PY"); then
  echo "nbbench: torch $v is already there; not reinstalling it"
else
  echo "nbbench: installing $TORCH_SPEC"
  run "$PY" -m pip install -q "$TORCH_SPEC"
fi
run "$PY" -m pip install -q -e '.[test]'
