#!/usr/bin/env bash
# Issue 56's second bar: a `django-admin startproject` site with six pages of 60-100 ms
# and every installed server; the default run (10 minutes) must complete its plan within
# the budget and end with an interval on the leader of every page.
#
# The project is Django's own template (from PyPI), in a fresh virtual environment,
# djbench installed as a package from this checkout. Its pages are written here, as a
# team's would be: each does some CPU work (a template over rows) and waits on I/O
# (a sleep standing for a database or an upstream call), 60-100 ms in all on an idle
# core. Loopback only; every step bounded in time.
#
#   bash loadtests/six_pages.sh [WORKDIR]        # default /tmp/djbench-six-pages
#
# It leaves the results (and a report) in WORKDIR/site/bench-results and prints the
# answer; the wall time of the run is the last line.
set -euo pipefail
checkout=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/djbench-six-pages}
python=${PYTHON:-python3}
mkdir -p "$work"
cd "$work"
if [ ! -x venv/bin/python ]; then
  "$python" -m venv venv
fi
timeout 1200 venv/bin/pip install --quiet --disable-pip-version-check "$checkout[servers]"
venv/bin/pip list --disable-pip-version-check 2>/dev/null | grep -iE '^(django|djbench) '
rm -rf site && mkdir site
venv/bin/django-admin startproject mysite site
cd site
# Six pages: (CPU ms, I/O wait ms) from 60 to 100 ms in all, half CPU-heavy, half waiting.
cat > mysite/pages.py <<'EOF'
import time

from django.http import HttpResponse
from django.template import engines

ROWS = engines["django"].from_string(
    "<table>{% for r in rows %}<tr><td>{{ r.0 }}</td><td>{{ r.1|floatformat:2 }}</td></tr>{% endfor %}</table>"
)


def _page(cpu_ms: float, wait_ms: float):
    def view(request):
        began = time.thread_time()
        rows, n = [], 0
        while (time.thread_time() - began) * 1000 < cpu_ms:
            rows.append((n, n / 7))
            n += 1
            if len(rows) > 200:
                ROWS.render({"rows": rows})
                rows = []
        time.sleep(wait_ms / 1000)
        return HttpResponse(ROWS.render({"rows": rows[:50]}))

    return view


PAGES = {
    "catalogue": (50, 10),
    "search": (70, 10),
    "report": (90, 10),
    "product": (15, 45),
    "basket": (20, 60),
    "checkout": (25, 75),
}
EOF
cat >> mysite/urls.py <<'EOF'

from mysite.pages import PAGES, _page

# The six pages only (the template's admin would be a seventh, fast page).
urlpatterns = [path(f"{name}/", _page(*ms), name=name) for name, ms in PAGES.items()]
EOF
# The one line a user adds.
printf '\nINSTALLED_APPS += ["djbench"]\n' >> mysite/settings.py
timeout 300 ../venv/bin/python manage.py migrate --noinput -v 0
timeout 300 ../venv/bin/python manage.py benchinit
began=$(date +%s)
timeout 1800 ../venv/bin/python manage.py runbench
ended=$(date +%s)
latest=$(ls -t bench-results/*.json | head -n 1)
../venv/bin/python manage.py benchreport "$latest" --markdown bench-results/report.md
echo "results: $PWD/$latest"
echo "runbench wall time: $((ended - began)) s"
