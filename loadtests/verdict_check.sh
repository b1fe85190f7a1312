#!/usr/bin/env bash
# The decision engine end to end (issue 21's done-when): a version matrix over two commits
# of a fresh clone of this repository, where the second commit either adds a middleware
# that burns CPU on every request (worse) or changes only a comment (aa: nothing changed).
#
#   loadtests/verdict_check.sh worse [SPIN_FRACTION] [more runbench options]
#   loadtests/verdict_check.sh aa    [ignored]       [more runbench options]
#   loadtests/verdict_check.sh both  [SPIN_FRACTION] [more runbench options]
#
# both: the A/A commit, then the slower one on top, judged against the same base in one
# matrix (both ways in one command: 2026-12-04, 17 rounds in 10.5 min, A/A x1.040 and
# x1.013 inconclusive, 0.25 worse x0.865 [0.810-0.923] on movies-sync).
#
# SPIN_FRACTION (default 0.25): the middleware burns this share of the CPU time the rest
# of the request took (loadtests/regressions/middleware.py), so the slowdown is larger
# where Django's own work is (movies-sync) than where the server's is (health-sync).
# Measured here on gunicorn-sync: 0.15 gave about x0.92 (health-sync) and x0.87
# (movies-sync); 0.5 about x0.85 and x0.56.
# The clone goes to a temporary folder; the matrix's results stay in it (printed at the
# end). Exit code: runbench's (1: something got worse or failed). DJBENCH_BUDGET (default:
# none, the horizon sized by power, at most 60m) is the matrix's wall time.
set -euo pipefail
kind=${1:?usage: verdict_check.sh worse|aa|both [SPIN_FRACTION] [runbench options]}
fraction=${2:-0.25}
shift $(( $# < 2 ? $# : 2 ))
here=$(cd "$(dirname "$0")/.." && pwd)
python="$here/.venv/bin/python"
[ -x "$python" ] || { echo "run 'make venv' in $here first" >&2; exit 2; }
work="$(mktemp -d)/djbench"
git clone -q "$here" "$work"
cd "$work"
commit() { git -c user.name=djbench -c user.email=djbench@localhost commit -qam "verdict check: $1"; }
refs=(HEAD~1 HEAD)
if [ "$kind" = both ]; then
  printf '\n# verdict check: a comment, nothing else\n' >> sampleproject/settings.py
  commit aa
  kind=worse
  refs=(HEAD~2 HEAD~1 HEAD)
fi
case "$kind" in
  worse)
    printf '\n# verdict check: every request burns more CPU\nMIDDLEWARE = ["loadtests.regressions.middleware.SpinMiddleware", *MIDDLEWARE]\nSPIN_FRACTION = %s\n' \
      "$fraction" >> sampleproject/settings.py ;;
  aa)
    printf '\n# verdict check: a comment, nothing else\n' >> sampleproject/settings.py ;;
  *) echo "worse, aa or both, not $kind" >&2; exit 2 ;;
esac
commit "$kind"
echo "clone: $work"
# Through the CI workflow's own script (issue 39): the same matrix, its summary, JUnit
# and BMF under bench-results/ci, and its exit code.
status=0
PYTHON="$python" DJBENCH_BUDGET="${DJBENCH_BUDGET:-}" \
  DJBENCH_ARGS="--servers gunicorn-sync,uvicorn --scenarios health-sync,movies-sync --no-color $*" \
  deploy/ci/upgrade-gate.sh "${refs[@]}" || status=$?
echo "exit code $status; results under $work/bench-results/ci"
exit "$status"
