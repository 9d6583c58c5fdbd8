#!/usr/bin/env bash
# Build the JupyterLab extension (labextension/, TypeScript) into nbbench/labextension/, from
# where the wheel ships it as share/jupyter/labextensions/nbbench/.  Needs Node.js (18+) and
# the jupyterlab package (its jlpm, and its staging package.json: the versions of the shared
# JupyterLab packages the extension is built against).  Usage: tools/build-labextension.sh PYTHON
set -euo pipefail
PY="${1:-python3}"
case "$PY" in */*) PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")" ;; esac  # before the cd below
cd "$(dirname "$0")/../labextension"
BIN="$(dirname "$("$PY" -c 'import sys; print(sys.executable)')")"
JLPM="$BIN/jlpm"
[ -x "$JLPM" ] || { echo "build-labextension: no jlpm next to $PY (install jupyterlab)" >&2; exit 1; }
command -v node >/dev/null || { echo "build-labextension: Node.js is needed to build the extension" >&2; exit 1; }
CORE="$("$PY" -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))')"
start=$(date +%s)
if [ ! -f node_modules/.installed ] || [ package.json -nt node_modules/.installed ] || [ yarn.lock -nt node_modules/.installed ]; then
  "$JLPM" install --mode=skip-build >/dev/null
  touch node_modules/.installed
fi
rm -rf lib tsconfig.tsbuildinfo ../nbbench/labextension
node_modules/.bin/tsc
node node_modules/@jupyterlab/builder/lib/build-labextension.js --core-path "$CORE" . >/dev/null
echo "labextension: built into nbbench/labextension/ in $(( $(date +%s) - start )) s"
