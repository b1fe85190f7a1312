#!/usr/bin/env bash
# Upgrade validation as a CI step: the base and the head of a change in one matrix
# (runbench --matrix "ref=BASE,HEAD"), the files CI reads, and runbench's exit code (0
# nothing worse, 1 a page or pair worse or a threshold of the scenario file missed, 3
# the run could not complete; docs/reference/exit-codes.md). Cost first: where Valgrind
# is installed, each side's pages are counted (instructions per request, deterministic,
# minutes) and a page costlier by more than 1% or running other SQL fails; then the
# paired wall-clock rounds (both sides in every round), unless DJBENCH_ARGS holds
# --cost-only. A pair left undecided at the budget is said in the summary and passes,
# unless DJBENCH_ARGS holds --on-inconclusive fail.
#
#   deploy/ci/upgrade-gate.sh BASE [HEAD ...]
#
# More refs after HEAD are more cells, each judged against BASE (a series of commits).
# Run from the project's checkout (manage.py beside it). Settings, all optional:
#   DJBENCH_BUDGET   the rounds' wall time; unset, the rounds a 10% change on one
#                    pair needs for 80% power at the usual noise (at most 60m; fewer
#                    when every pair is decided at an earlier look)
#   DJBENCH_ARGS     more runbench options: "--cost-only" (cost alone), "--no-cost",
#                    "--servers gunicorn-sync --scenarios health-sync"
#   DJBENCH_OUTPUT   the results folder (default bench-results/ci): the matrix, each cell's
#                    results, report and guide, summary.md, junit.xml and bmf.json
#   PYTHON           the interpreter with djbench installed (default python)
# On GitHub Actions the summary is appended to $GITHUB_STEP_SUMMARY.
set -uo pipefail

base=${1:?usage: upgrade-gate.sh BASE [HEAD ...]}
shift
refs=$base
for ref in "${@:-HEAD}"; do refs="$refs,$ref"; done
out=${DJBENCH_OUTPUT:-bench-results/ci}
mkdir -p "$out"
# shellcheck disable=SC2086  # DJBENCH_ARGS is a list of options, split on purpose
"${PYTHON:-python}" manage.py runbench --matrix "ref=$refs" \
  ${DJBENCH_BUDGET:+--budget "$DJBENCH_BUDGET"} ${DJBENCH_ARGS:-} --output "$out" \
  --summary "$out/summary.md" --junit "$out/junit.xml" --bmf "$out/bmf.json"
status=$?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$out/summary.md" ]; then
  cat "$out/summary.md" >> "$GITHUB_STEP_SUMMARY"
fi
echo "djbench upgrade gate: exit $status (summary: $out/summary.md, JUnit: $out/junit.xml)"
exit "$status"
