#!/usr/bin/env bash
# djbench on a published project nobody here wrote: Wagtail's project template (from
# PyPI), in a fresh virtual environment, djbench installed as a package from this
# checkout. The only edit to the project is the line that adds "djbench" to
# INSTALLED_APPS. Loopback only; every step bounded in time.
#
#   bash loadtests/thirdparty.sh [WORKDIR]        # default /tmp/djbench-thirdparty
#
# It leaves the results (and a report) in WORKDIR/site/bench-results.
set -euo pipefail
checkout=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/djbench-thirdparty}
python=${PYTHON:-python3}
mkdir -p "$work"
cd "$work"
if [ ! -x venv/bin/python ]; then
  "$python" -m venv venv
fi
timeout 1200 venv/bin/pip install --quiet --disable-pip-version-check "$checkout[servers]" wagtail
venv/bin/pip list --disable-pip-version-check 2>/dev/null | grep -iE '^(wagtail|django|djbench) '
rm -rf site && mkdir site
venv/bin/wagtail start mysite site
cd site
# The one line a user adds. (Wagtail's template has no asgi.py: djbench serves Django's.)
printf '\nINSTALLED_APPS += ["djbench"]\n' >> mysite/settings/base.py
timeout 300 ../venv/bin/python manage.py migrate --noinput -v 0
timeout 300 ../venv/bin/python manage.py benchinit
timeout 900 ../venv/bin/python manage.py runbench --verify-only
timeout 1800 ../venv/bin/python manage.py runbench --quick
latest=$(ls -t bench-results/*.json | head -n 1)
../venv/bin/python manage.py benchreport "$latest" --markdown bench-results/report.md --html bench-results/report.html
echo "results: $PWD/$latest"
