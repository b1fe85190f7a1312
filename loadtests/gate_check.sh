#!/usr/bin/env bash
# The upgrade gate with cost first (issue 55), on commits of this repository: a clone in
# a temporary folder gets three commits on top of HEAD, each compared with HEAD by
# deploy/ci/upgrade-gate.sh with DJBENCH_ARGS="--cost-only" (as the workflow files):
#   comment  a comment-only change:           exit 0, every page equal (A/A), REPEATS times
#   work     FixedWorkMiddleware in settings: exit 1, health-sync worse (x1.02-1.03),
#            naming FixedWorkMiddleware.__call__
#   query    ExtraQueryMiddleware in settings: exit 1, movies-sync alone with a new SQL shape
# Each gate's wall time and each page's ratio are printed; the matrices stay in the
# temporary folder for reading.
#
#   loadtests/gate_check.sh [REPEATS] [SCENARIOS]    (defaults: 1, health-sync,movies-sync)
set -uo pipefail
repeats=${1:-1}
scenarios=${2:-health-sync,movies-sync}
here=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$here/.venv/bin/python}
[ -x "$python" ] || { echo "run 'make venv' in $here first" >&2; exit 2; }
work=$(mktemp -d)
git clone -q "$here" "$work/repo"
cd "$work/repo"
git -c user.name=gate -c user.email=gate@localhost commit -q --allow-empty -m base
base=$(git rev-parse HEAD)
commit() {  # name, line appended to sampleproject/settings.py (or to urls.py: a comment)
  git checkout -q "$base"
  if [ "$1" = comment ]; then echo "# a comment-only change" >> sampleproject/urls.py
  else echo "$2" >> sampleproject/settings.py; fi
  git -c user.name=gate -c user.email=gate@localhost commit -q -am "$1"
  git rev-parse HEAD
}
comment=$(commit comment)
slower=$(commit work \
  'MIDDLEWARE = ["loadtests.regressions.middleware.FixedWorkMiddleware", *MIDDLEWARE]')
query=$(commit query \
  'MIDDLEWARE = ["loadtests.regressions.middleware.ExtraQueryMiddleware", *MIDDLEWARE]')
git checkout -q "$base"
gate() {  # name, ref, expected exit
  local out="$work/out-$1" started status
  started=$(date +%s)
  DJBENCH_ARGS="--cost-only --scenarios $scenarios" DJBENCH_OUTPUT="$out" PYTHON="$python" \
    deploy/ci/upgrade-gate.sh "$base" "$2" > "$out.log" 2>&1
  status=$?
  echo "== $1: exit $status ($3 expected), $(( $(date +%s) - started )) s"
  grep -E "^(health|movies|deep)[a-z-]*: |^    |cost counted" "$out.log" | sed 's/^/   /'
  [ "$status" = "$3" ]
}
failed=0
for i in $(seq "$repeats"); do gate "comment-$i" "$comment" 0 || failed=1; done
gate work "$slower" 1 || failed=1
gate query "$query" 1 || failed=1
echo "gate check: $([ $failed = 0 ] && echo as expected || echo NOT as expected); in $work"
exit $failed
