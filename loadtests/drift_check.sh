#!/usr/bin/env bash
# Two separate runs of the same code, the second while other work takes CPU on the
# server's core (a busy loop standing in for a package install), then benchcompare.
# Shows what the per-trial record of other processes' CPU is for: without it the
# second run reads as a regression of the server; with it the pair is "not comparable:
# the machine moved". Bounded: the busy loop is killed when the run ends (and after
# 300 s at most). Load goes to loopback only, as in every runbench.
#
#   loadtests/drift_check.sh [SERVER_CPU]      # default CPU 0, the server's under --cpus auto
set -euo pipefail
cpu=${1:-0}
here=$(cd "$(dirname "$0")/.." && pwd)
python="$here/.venv/bin/python"
out=$(mktemp -d)
run() {
  "$python" "$here/manage.py" runbench --servers gunicorn-sync --scenarios health-sync \
    --concurrency 16 --trials 6 --duration 4 --no-color --output "$out/$1" >"$out/$1.log" 2>&1
}
cd "$here"
run quiet
timeout 300 taskset -c "$cpu" "$python" -c "while True: pass" &
hog=$!
trap 'kill $hog 2>/dev/null || true' EXIT
run busy
kill "$hog" 2>/dev/null || true
status=0
"$python" manage.py benchcompare "$out"/quiet/*.json "$out"/busy/*.json --no-color || status=$?
echo "benchcompare exit code $status; runs under $out"
