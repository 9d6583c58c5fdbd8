#!/usr/bin/env bash
# `make test`: the unit suite (pytest-xdist, JOBS workers, groups kept together) and the
# notebooks (nbmake) side by side; each one's output in full, then one line with both exit
# codes and the time.  Fails when either fails — also when either ran no test at all
# (pytest's exit 5), which must never pass as green.
#   usage: tools/run-tests.sh PYTHON JOBS NB_TIMEOUT [PYTEST_ARGS...]
set -uo pipefail
py=$1 jobs=$2 nb_timeout=$3
shift 3
cd "$(dirname "$0")/.."

start=$(date +%s)
nblog=$(mktemp) nbhome=$(mktemp -d)
trap 'rm -rf "$nblog" "$nbhome"' EXIT

# the notebooks: their own NBBENCH_HOME, their output kept until the unit suite has printed its own
NBBENCH_HOME=$nbhome MPLBACKEND=Agg "$py" -m pytest -q -p no:cacheprovider --nbmake \
  --nbmake-timeout="$nb_timeout" notebooks/ >"$nblog" 2>&1 &
nbpid=$!

xdist=()
[ "$jobs" != 0 ] && xdist=(-n "$jobs" --dist loadgroup)
MPLBACKEND=Agg "$py" -m pytest -q -rfE "${xdist[@]}" "$@"
unit=$?

wait "$nbpid"
nb=$?
echo "== notebooks (nbmake, $(ls notebooks/*.ipynb | wc -l) notebooks)"
cat "$nblog"

word() { case $1 in 0) echo passed;; 5) echo "NO TESTS RAN (pytest exit 5)";; *) echo "FAILED (exit $1)";; esac; }
echo "== make test: unit $(word $unit), notebooks $(word $nb), $(( $(date +%s) - start )) s wall"
[ "$unit" -eq 0 ] && [ "$nb" -eq 0 ]
