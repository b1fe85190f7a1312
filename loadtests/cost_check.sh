#!/usr/bin/env bash
# The cost probe's verdicts both ways (issue 55): health-sync and movies-sync counted on
# the sample as it is twice (A/A: equal, exit 0) and with loadtests/regressions'
# FixedWorkMiddleware (FIXED_WORK_LOOPS turns of a Python loop per request, default 35:
# about 2% of health-sync: worse, exit 1, naming the middleware; movies-sync: 0.3%, equal), each by
# `runbench --cost`, judged by `benchcompare`. Counts do not move with the machine, so the
# three probes run one after the other.
#
#   loadtests/cost_check.sh [SEEDS]      (default 2)
set -euo pipefail
seeds=${1:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
python="$here/.venv/bin/python"
[ -x "$python" ] || { echo "run 'make venv' in $here first" >&2; exit 2; }
out="$(mktemp -d)"
cd "$here"
count() {  # settings module, folder
  "$python" manage.py runbench --cost --no-color --scenarios health-sync,movies-sync \
    --cost-seeds "$seeds" --output "$out/$2" --settings "$1" | grep -E "instructions per request|Results"
}
start=$(date +%s)
count sampleproject.settings base
count sampleproject.settings again
count loadtests.regressions.fixed_work slower
newest() { ls "$out/$1"/*.json; }
aa=0; "$python" manage.py benchcompare --no-color "$(newest base)" "$(newest again)" || aa=$?
worse=0; "$python" manage.py benchcompare --no-color "$(newest base)" "$(newest slower)" || worse=$?
echo "A/A exit $aa (0 expected); fixed work exit $worse (1 expected); $(( $(date +%s) - start )) s"
[ "$aa" = 0 ] && [ "$worse" = 1 ]
