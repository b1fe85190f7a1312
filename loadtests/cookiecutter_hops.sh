#!/usr/bin/env bash
# Issue 22's done-when on a project nobody here wrote: cookiecutter-django generated with
# use_async, DRF and WhiteNoise, its own locked dependencies (uv), its production
# settings on PostgreSQL; djbench installed from this checkout as a package, the only
# edit to the project the line that adds "djbench" to INSTALLED_APPS. runbench's verify
# gate counts the ASGI thread hops of each scenario and names what forces them: the
# causes must name WhiteNoise's middleware (sync only), never djbench's own middleware
# nor Django's internal wrappers. Loopback only; every step bounded in time.
#
#   bash loadtests/cookiecutter_hops.sh TEMPLATE [WORKDIR]
#
# TEMPLATE: a cookiecutter-django tree at its last commit before it required Python 3.14
# (0cdbf932, 2026-03-28: requires-python ==3.13.*), e.g. from the template repository:
#   git -C cookiecutter-django archive 0cdbf932 | tar -x -C TEMPLATE
# PYTHON: a Python 3.13 (default: python3.13 on PATH). Needs uv, PostgreSQL on
# 127.0.0.1:5432 (trust) and Redis on 127.0.0.1:6379 (the template's production cache).
set -euo pipefail
checkout=$(cd "$(dirname "$0")/.." && pwd)
template=$(cd "${1:?usage: cookiecutter_hops.sh TEMPLATE [WORKDIR]}" && pwd)
work=${2:-/tmp/djbench-cookiecutter}
python=${PYTHON:-python3.13}
export UV_PYTHON=$python
# Start clean, but remove only a folder this script made.
if [ -e "$work" ] && [ ! -e "$work/.djbench-cookiecutter" ]; then
  echo "refusing: $work exists and was not made by this script" >&2
  exit 2
fi
rm -rf "$work" && mkdir -p "$work" && touch "$work/.djbench-cookiecutter" && cd "$work"
# The template's post-generation hook runs `uv add` itself (its lock file).
timeout 600 uvx --quiet cookiecutter --no-input -o . "$template" project_name="Shop Site" \
  use_async=y rest_api=DRF use_whitenoise=y cloud_provider=None use_docker=n \
  mail_service="Other SMTP"
cd shop_site
export UV_PROJECT_ENVIRONMENT=$work/venv
timeout 600 uv sync --quiet --frozen --no-dev
before=$(uv pip list --python "$work/venv/bin/python" 2>/dev/null | grep -iE '^(django|gunicorn|uvicorn|whitenoise) ')
# djbench as a package, with the project's pins held: it must not change them.
uv export --quiet --frozen --no-dev --no-hashes --no-emit-project -o "$work/pins.txt"
timeout 600 uv pip install --quiet --python "$work/venv/bin/python" -c "$work/pins.txt" "$checkout"
after=$(uv pip list --python "$work/venv/bin/python" 2>/dev/null | grep -iE '^(django|gunicorn|uvicorn|whitenoise) ')
if [ "$before" != "$after" ]; then
  printf 'djbench changed the project'"'"'s pins:\n%s\n---\n%s\n' "$before" "$after" >&2
  exit 1
fi
echo "$after"
# The two lines djbench's system checks ask for (W001: its middleware first, as in the
# run that found the wrong culprit: djbench's middleware was blamed for WhiteNoise's hop).
printf '\nINSTALLED_APPS += ["djbench"]\nMIDDLEWARE = ["djbench.middleware.QueryCountMiddleware", *MIDDLEWARE]\n' \
  >> config/settings/base.py
psql -h 127.0.0.1 -U postgres -qc 'DROP DATABASE IF EXISTS shop_site' -c 'CREATE DATABASE shop_site'
export DJANGO_SETTINGS_MODULE=config.settings.production
export DATABASE_URL=postgres://postgres@127.0.0.1:5432/shop_site REDIS_URL=redis://127.0.0.1:6379/3
export DJANGO_SECRET_KEY=djbench-loopback-only DJANGO_ADMIN_URL=admin/
export DJANGO_ALLOWED_HOSTS=127.0.0.1,localhost,[::1] DJANGO_SECURE_SSL_REDIRECT=False
py=$work/venv/bin/python
export COLUMNS=400  # one table row a line
timeout 300 "$py" manage.py migrate --noinput -v 0
timeout 300 "$py" manage.py collectstatic --noinput -v 0
timeout 300 "$py" manage.py benchinit
timeout 900 "$py" manage.py runbench --verify-only --servers uvicorn,gunicorn-sync | tee "$work/verify.txt"
# The causes, read from the results file through djbench's own model: every scenario's
# hops name WhiteNoise's middleware; none names djbench or Django's internal wrappers.
latest=$(ls -t bench-results/*.json | head -n 1)
"$py" - "$latest" <<'PY'
import sys
from pathlib import Path

from djbench.results import store

plan = store.load(Path(sys.argv[1])).plan
counted = {name: s.asgi_hops for name, s in plan.scenarios.items() if s.asgi_hops}
assert counted, "no scenario's hops were counted"
for name, hops in counted.items():
    causes = " | ".join(hops.causes)
    assert "whitenoise.middleware.WhiteNoiseMiddleware: sync only" in causes, (name, causes)
    assert "djbench" not in causes and "convert_exception_to_response" not in causes, causes
print(f"ok: {len(counted)} scenarios; every one's hop causes name WhiteNoise, none djbench")
PY
