#!/usr/bin/env bash
# Install a built wheel into a fresh virtual environment (no system site-packages, no torch)
# and check what a user gets: the CLI, `%load_ext nbbench` in a kernel, the JupyterLab
# extension and the server extension listed as enabled.  Usage: tools/smoke-wheel.sh WHEEL
# (a fresh venv in a temporary folder, removed afterwards; PIP_INDEX_URL etc. are honoured).
set -euo pipefail
WHEEL=$(readlink -f "${1:?usage: tools/smoke-wheel.sh dist/nbbench-*.whl}")
PYTHON=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
"$PYTHON" -m venv "$tmp/venv"
V="$tmp/venv/bin"
"$V/python" -m pip install -q --disable-pip-version-check "$WHEEL[lab]"
echo "smoke: installed $(basename "$WHEEL")[lab] into a fresh venv in $(( $(date +%s) - start )) s"
fail() { echo "smoke: FAILED: $*" >&2; exit 1; }
cd "$tmp"
"$V/nbbench" --help >/dev/null || fail "nbbench --help"
"$V/nbbench" --version
labext=$("$V/jupyter" labextension list 2>&1)
echo "$labext" | grep -E '^\s+nbbench v[0-9.]+ .*enabled.*OK' || fail "jupyter labextension list does not show nbbench enabled: $labext"
srvext=$("$V/jupyter" server extension list 2>&1)
echo "$srvext" | grep -E 'nbbench.server .*enabled' || fail "jupyter server extension list does not show nbbench.server enabled: $srvext"
"$V/python" - <<'PY' || fail "%load_ext nbbench in a kernel"
import nbformat
from nbclient import NotebookClient

nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell("%load_ext nbbench\nimport nbbench; print('nbbench', nbbench.__version__, 'loaded')")]
NotebookClient(nb, timeout=120, kernel_name="python3").execute()
out = "".join(o.get("text", "") for o in nb.cells[0].outputs)
assert "loaded" in out, nb.cells[0].outputs
print("smoke: kernel:", out.strip())
PY
echo "smoke: ok in $(( $(date +%s) - start )) s"
