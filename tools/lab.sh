#!/usr/bin/env bash
# `make lab`: JupyterLab on the tutorial notebooks, after a short banner of our own —
# the link (with its token), which notebook to open, the SSH tunnel line, how to stop —
# printed before JupyterLab's own log (kept to warnings and errors).
#   tools/lab.sh JUPYTER [more jupyter lab options…]
# NBBENCH_LAB_PORT     the port (default 8888; the next free one when it is taken)
# NBBENCH_LAB_NOTEBOOK the notebook it opens on (default 01-quickstart.ipynb, in notebooks/)
# NBBENCH_LAB_TOKEN    the token (default: a new random one); handed to JupyterLab in the
#                      environment (JUPYTER_TOKEN), never on its command line (`ps` shows that)
# NBBENCH_LAB_DRY_RUN=1 prints the banner and the command instead of starting it (tests).
set -euo pipefail
JUPYTER=${1:?usage: tools/lab.sh JUPYTER [jupyter lab options]}
shift
PORT=${NBBENCH_LAB_PORT:-8888}
NOTEBOOK=${NBBENCH_LAB_NOTEBOOK:-01-quickstart.ipynb}
TOKEN=${NBBENCH_LAB_TOKEN:-$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')}

taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
first=$PORT
while taken "$PORT"; do
  PORT=$((PORT + 1))
  if [ "$PORT" -gt $((first + 20)) ]; then
    echo "nbbench lab: ports $first-$PORT are all taken; set NBBENCH_LAB_PORT to a free one" >&2
    exit 1
  fi
done
moved=""
[ "$PORT" != "$first" ] && moved="   (port $first is taken)"

URL="http://127.0.0.1:$PORT/lab/tree/$NOTEBOOK?token=$TOKEN"
# the last tutorial's number, from the folder (a new notebook is named without editing this)
last=$(cd notebooks 2>/dev/null && ls [0-9][0-9]-*.ipynb 2>/dev/null | tail -n 1 | cut -c1-2)
line="────────────────────────────────────────────────────────────────────────"
cat <<BANNER
$line
 nbbench lab: JupyterLab on the tutorial notebooks (notebooks/)
   open    $URL$moved
   start   $NOTEBOOK, then 02 … ${last:-06} in order
   remote  on your laptop: ssh -L $PORT:127.0.0.1:$PORT HOST   then open the link there
           (HOST: this machine as you reach it over SSH, e.g. you@$(hostname))
   stop    Ctrl-C twice here, or from another shell: $JUPYTER lab stop $PORT
$line
BANNER

args=(lab --notebook-dir=notebooks "--LabApp.default_url=/lab/tree/$NOTEBOOK" "--ServerApp.ip=127.0.0.1"
      "--ServerApp.port=$PORT" --ServerApp.port_retries=0 --ServerApp.open_browser=False
      --ServerApp.log_level=WARN "$@")
if [ -n "${NBBENCH_LAB_DRY_RUN:-}" ]; then
  echo "would run: JUPYTER_TOKEN=… $JUPYTER ${args[*]}"
  exit 0
fi
export JUPYTER_TOKEN="$TOKEN"
exec "$JUPYTER" "${args[@]}"
