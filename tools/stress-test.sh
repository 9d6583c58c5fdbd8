#!/usr/bin/env bash
# `make stress-test`: the unit suite three times (ROUNDS) with two busy loops beside it (BUSY),
# NBBENCH_STRESS=1 (default; 0 keeps CI's case counts) for the tests that draw more cases under it (random signals, random command
# lines); one line of failures per round, then the failing tests of every round.
#   usage: tools/stress-test.sh PYTHON JOBS [PYTEST_ARGS...]
set -uo pipefail
py=$1 jobs=$2
shift 2
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3} busy=${BUSY:-2}

pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; }
trap stop EXIT
trap 'stop; exit 130' INT TERM
for _ in $(seq "$busy"); do
  sh -c 'while :; do :; done' &
  pids+=($!)
done

export NBBENCH_STRESS=${NBBENCH_STRESS:-1} MPLBACKEND=Agg   # NBBENCH_STRESS=0: the CI case counts
xdist=()
[ "$jobs" != 0 ] && xdist=(-n "$jobs" --dist loadgroup)
logdir=$(mktemp -d /tmp/nbbench-stress-XXXXXX)
summary=()
worst=0
for r in $(seq "$rounds"); do
  echo "== round $r/$rounds: the unit suite beside $busy busy loops ($(uptime | sed 's/.*load/load/'))"
  start=$(date +%s)
  "$py" -m pytest -q -rfE -p no:cacheprovider "${xdist[@]}" "$@" >"$logdir/round$r.log" 2>&1
  rc=$?
  tail -n 1 "$logdir/round$r.log"
  failed=$(grep -cE '^(FAILED|ERROR) ' "$logdir/round$r.log")
  summary+=("round $r: exit $rc, $failed failed, $(( $(date +%s) - start )) s")
  grep -E '^(FAILED|ERROR) ' "$logdir/round$r.log" | sed "s/^/  round $r: /"
  [ "$rc" -ne 0 ] && worst=$rc
done
echo "== stress-test ($rounds rounds, $busy busy loops; logs in $logdir)"
printf '%s\n' "${summary[@]}"
exit "$worst"
