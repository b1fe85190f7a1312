"""A default or quick run fitted to the project's pages by a pilot (issue 36 item 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from djbench.plan.fitting import ServiceTime, fit, request_timeout
from djbench.results import store
from tests.userproject import users_project


def times(*ms: float) -> list[ServiceTime]:
    return [
        ServiceTime(scenario=f"s{i}", requests=8, median_ms=m, slowest_ms=m * 1.5)
        for i, m in enumerate(ms)
    ]


def test_fast_pages_keep_the_profile() -> None:
    found = fit(times(0.8, 2.0), parallel=1, profile="default", concurrency=32, duration=2.0)
    assert (found.concurrency, found.duration) == (32, 2.0)
    assert found.request_timeout == request_timeout(2.0)


def test_slow_pages_get_fewer_connections_longer_windows_and_a_timeout_above_the_wait() -> None:
    # The bakerydemo case: pages of 24-89 ms, 32 connections on one CPU queued 2.8 s.
    found = fit(times(24, 89), parallel=1, profile="default", concurrency=32, duration=2.0)
    assert found.concurrency == 5  # 500 ms / 89 ms
    assert found.concurrency * 89 <= found.target_ms
    assert found.duration == 10.0  # 200 answers at 89 ms is 17.8 s: capped, and said
    assert "a 10 s window holds about 112 answers" in found.why
    wait_s = found.concurrency * 89 * 1.5 / 1000
    assert found.request_timeout >= 10 * wait_s
    assert found.service[1].scenario == "s1" and "s1 takes 89 ms" in found.why


def test_at_least_two_connections_per_cpu_and_the_teams_target() -> None:
    found = fit(times(400), parallel=2, profile="quick", concurrency=32, duration=1.0)
    assert found.concurrency == 4  # never below 2 x parallel: the server is kept busy
    assert found.duration == 3.0  # quick's cap
    tight = fit(times(10), 1, "default", 32, 2.0, target_ms=100)
    assert tight.concurrency == 10 and tight.target_ms == 100


SLOW_VIEW = """
import time

from django.http import HttpResponse


def slow(request):
    time.sleep(0.06)
    return HttpResponse("<html><title>Slow</title>slow</html>")
"""

SCENARIOS = """
version = 1
health_path = "/ping/"

[profiles]
quick = ["slow"]

[[scenario]]
name = "slow"
path = "/slow/"
expect = { status = 200, contains = ["slow"] }
"""


@pytest.mark.servers
def test_a_60ms_page_measures_under_the_quick_profile(tmp_path: Path, one_pass: None) -> None:
    root, env = users_project(tmp_path)
    (root / "mysite" / "slow.py").write_text(SLOW_VIEW)
    urls = root / "mysite" / "urls.py"
    urls.write_text(
        urls.read_text()
        .replace("from . import views", "from . import slow, views")
        .replace("]", '    path("slow/", slow.slow),\n]', 1)
    )
    (root / "loadtests" / "default.toml").write_text(SCENARIOS)
    out = tmp_path / "out"
    done = subprocess.run(
        [
            *(sys.executable, "manage.py", "runbench", "--quick"),
            *("--servers", "gunicorn-sync", "--output", str(out)),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Pilot: each scenario's service time on gunicorn-sync" in done.stdout
    assert "Fitted to these pages:" in done.stdout
    [path] = out.glob("*.json")
    document = store.load(path)
    fitted = document.plan.fit
    assert fitted is not None and 55 <= fitted.service[0].median_ms <= 200
    # 500 ms / 60 ms: no more connections than the layout serves within the target.
    assert 2 <= fitted.concurrency <= 8 and document.plan.concurrency == [fitted.concurrency]
    # The screen's pair, then gunicorn-sync at its other layout (the worker count).
    [pair] = [e for e in document.results if e.config is None]
    assert pair.status == "ok" and pair.trials
    for e in document.results:
        for trial in e.trials:
            assert trial.errors.get("timeout", 0) == 0, trial
    # What the pilot chose is what --resume would use.
    saved = json.loads(path.read_text())["plan"]["options"]
    assert saved["concurrency"] == [fitted.concurrency]
    assert saved["request_timeout"] == fitted.request_timeout
