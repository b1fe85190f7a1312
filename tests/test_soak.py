"""Soaks (--soak) and worker recycling (--recycle): parsing, mapping, trends, and a live
30-second soak whose recycled workers are detected and counted."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from djbench.measure.drivers.base import SERIES_MARKER, marked_lines
from djbench.plan.options import OptionError
from djbench.plan.recycle import OFF, Recycle, parse_axis, parse_duration, parse_one
from djbench.reports import guide, report
from djbench.results import store as results
from djbench.servers import SERVERS
from djbench.servers.entry import args_file, recycle_argv
from djbench.verdicts import runs as analysis
from djbench.verdicts.engine import stats
from tests.slowserver import DELAY, SlowServer

# --- parsing ------------------------------------------------------------------------


def test_recycle_settings_parse_and_label() -> None:
    assert parse_one("off") is OFF or parse_one("off") == OFF
    r = parse_one("max-requests=5000, jitter=500")
    assert (r.max_requests, r.jitter, r.max_rss, r.lifetime) == (5000, 500, None, None)
    assert r.label == "max-requests=5000,jitter=500"
    assert parse_one(r.label) == r  # the label is how a run file stores it
    axis = parse_axis("off;max-rss=300;off;lifetime=120")
    assert [a.label for a in axis] == ["off", "max-rss=300", "lifetime=120"]
    assert parse_axis(None) == [] and parse_axis("  ") == []


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("max-request=5", "valid: off, or max-requests=N"),
        ("jitter=5", "give max-requests=N with it"),
        ("max-rss=0", "at least 1"),
        ("max-rss=a lot", "whole number"),
        ("max-rss=1,max-rss=2", "given twice"),
    ],
)
def test_bad_recycle_settings_are_one_sentence(raw: str, words: str) -> None:
    with pytest.raises(OptionError, match=words) as caught:
        parse_one(raw)
    assert "\n" not in str(caught.value)


def test_durations() -> None:
    assert parse_duration("--soak", "90") == 90
    assert parse_duration("--soak", "30s") == 30
    assert parse_duration("--soak", "10m") == 600
    assert parse_duration("--soak", "1h30m") == 5400
    for bad in ("10x", "-5", "0", "25h"):
        with pytest.raises(OptionError, match="--soak"):
            parse_duration("--soak", bad)


# --- each server's own options --------------------------------------------------------


def test_recycling_maps_to_each_servers_own_options() -> None:
    asked = parse_one("max-requests=1000,jitter=100,max-rss=300")
    gunicorn = SERVERS["gunicorn-sync"].recycling(asked, 2)
    assert gunicorn.argv == ["--max-requests", "1000", "--max-requests-jitter", "100"]
    assert gunicorn.ignored == ["max-rss"] and gunicorn.refused is None
    uwsgi = SERVERS["uwsgi"].recycling(asked, 2)
    assert uwsgi.argv == [
        "--max-requests",
        "1000",
        "--max-requests-delta",
        "100",
        "--reload-on-rss",
        "300",
    ]
    assert uwsgi.ignored == []
    granian = SERVERS["granian-asgi"].recycling(asked, 2)
    assert granian.argv == ["--workers-max-rss", "300"]
    assert set(granian.ignored) == {"max-requests", "jitter"}
    # What a server cannot do is refused with its reason, never silently dropped.
    assert "by requests only" in (
        SERVERS["gunicorn-sync"].recycling(parse_one("max-rss=9"), 2).refused or ""
    )
    assert "exits" in (SERVERS["uvicorn"].recycling(asked, 1).refused or "")
    assert SERVERS["uvicorn"].recycling(asked, 2).argv == [
        "--limit-max-requests",
        "1000",
        "--limit-max-requests-jitter",
        "100",
    ]
    assert "no worker recycling" in (SERVERS["daphne"].recycling(asked, 1).refused or "")
    assert "at least 60" in (
        SERVERS["granian-wsgi"].recycling(parse_one("lifetime=30"), 2).refused or ""
    )
    for spec in SERVERS.values():
        assert spec.recycling(OFF, 1).refused is None  # every server can run without


def test_off_strips_granians_own_recycling_from_its_deploy_file() -> None:
    from djbench.servers import LaunchConfig

    spec = SERVERS["granian-asgi"]
    config = LaunchConfig(
        host="127.0.0.1",
        port=1,
        workers=1,
        threads=None,
        wsgi_app="a:b",
        asgi_app="a:b",
        config_file=Path(__file__).resolve().parent.parent / "djbench/deploy/granian-asgi.args",
    )
    assert "--workers-lifetime" in args_file(spec, config)  # the file's own production value
    off = args_file(spec, _with(config, OFF))
    assert "--workers-lifetime" not in off and "--workers-max-rss" not in off
    asked = _with(config, parse_one("max-rss=200"))
    assert recycle_argv(spec, asked, []) == ["--workers-max-rss", "200"]
    assert args_file(spec, asked).count("--workers-max-rss") == 0


def _with(config: Any, recycle: Recycle) -> Any:
    import dataclasses

    return dataclasses.replace(config, recycle=recycle)


# --- trends and the small-sample test -------------------------------------------------


def test_trend_finds_growth_and_not_noise() -> None:
    rng = random.Random(1)
    minutes = [i * 5.0 for i in range(120)]  # 10 minutes of readings every 5 s
    leak = [(t, 100 + t / 3600 * 30 + rng.gauss(0, 0.3)) for t in minutes]  # 30 MB/h
    found = stats.trend(leak)
    assert found["verdict"] == "grows"
    low, high = found["ci95"]
    assert low < 30 < high
    flat = [(t, 100 + rng.gauss(0, 0.3)) for t in minutes]
    assert stats.trend(flat)["verdict"] == "flat"
    # A recycled worker's sawtooth is not growth.
    saw = [(t, 100 + (t % 60) / 10) for t in minutes]
    assert stats.trend(saw)["verdict"] == "flat"
    assert stats.trend(leak[:5])["verdict"] == "too_short"
    assert stats.trend([])["verdict"] == "too_short"


def test_builtin_driver_prints_a_time_line_that_adds_up() -> None:
    with SlowServer() as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "djbench.measure.drivers.loadgen",
                "--port",
                str(server.port),
                "--connections",
                "8",
                "--duration",
                "2.2",
                "--series",
                "0.5",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    lines = marked_lines(done.stdout, SERIES_MARKER)
    total = json.loads(done.stdout.split("DJBENCH-BUILTIN ", 1)[1])
    assert len(lines) == 5  # four whole slices and the last partial one
    assert [round(s["t"], 1) for s in lines] == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert sum(s["requests"] for s in lines) == total["requests"]
    for s in lines[:-1]:
        assert s["p50"] >= DELAY * 1000 * 0.9  # each answer takes DELAY
    # Bad lines (a driver killed mid-line) are skipped, not fatal.
    assert marked_lines(SERIES_MARKER + '{"t": 1\n' + SERIES_MARKER + '{"t": 2}\n', SERIES_MARKER)


# --- runbench --------------------------------------------------------------------------


def run(*args: str) -> str:
    out = StringIO()
    call_command("runbench", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--soak", "10x"], "--soak takes a duration"),
        (["--soak", "1m", "--duration", "3"], "leave out --duration"),
        (["--soak", "1m", "--driver", "wrk"], "--soak needs the builtin driver"),
        (["--soak", "1m", "--scenarios", "ws-echo"], "HTTP scenarios only"),
        (["--recycle", "sometimes"], "valid: off"),
    ],
)
def test_bad_soak_options_are_one_line(args: list[str], words: str, tmp_path: Path) -> None:
    from djbench.measure.drivers import DRIVERS

    if "wrk" in args and not DRIVERS["wrk"].available():
        args = [a if a != "wrk" else "builtin" for a in args]
        pytest.skip("wrk is not installed: the refusal names it only when it could run")
    with pytest.raises(CommandError, match=words) as caught:
        run("--no-setup", "--servers", "gunicorn-sync", "--output", str(tmp_path), *args)
    assert caught.value.returncode == 2
    assert "\n" not in str(caught.value)


@pytest.mark.servers
def test_a_30_second_soak_counts_every_recycled_worker(live_database: str, tmp_path: Path) -> None:
    """gunicorn with two workers recycled every ~800 requests: every restart is seen (PIDs
    new to the tree, each replacing one), as many as the requests served allow; a
    server that cannot recycle so is recorded incompatible. (What "off" maps to is
    checked above without a 30 s window of its own.)"""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("independent of the database: run in the SQLite pass only")
    max_requests, jitter = 800, 100
    out = run(
        "--no-setup",
        "--servers",
        "gunicorn-sync,daphne",
        "--scenarios",
        "health-sync",
        "--soak",
        "30s",
        "--warmup",
        "0.5",
        "--workers",
        "2",
        "--ws-idle",
        "0",
        "--recycle",
        f"max-requests={max_requests},jitter={jitter}",
        "--output",
        str(tmp_path),
    )
    [path] = tmp_path.glob("*.json")
    document = results.load(path)
    entries = {e.label: e for e in document.results}
    assert document.plan.soak_s == 30
    assert "daphne" in out  # it runs one process: skipped for --workers 2
    on = entries[f"gunicorn-sync recycle=max-requests={max_requests},jitter={jitter}"]
    assert (
        f"--max-requests {max_requests} --max-requests-jitter {jitter}"
        in on.command["server"].shell
    )
    for entry in (on,):
        assert entry.status == "ok", entry.reason
        [trial] = entry.trials
        line = trial.timeline
        assert line is not None and 29 < trial.duration_s < 32
        assert len(line.load) == 30  # one slice a second
        assert sum(p.requests for p in line.load) == trial.requests
        assert len(line.memory) >= 25 and all(m.pss > 0 for m in line.memory)
        # Two workers, or one when a recycled worker's successor was born as the window
        # opened (then seen as a restart at its very start).
        started = len(line.workers_at_start)
        assert started == 2 or (started == 1 and any(r.t < 2.0 for r in line.restarts)), (
            line.workers_at_start,
            [r.t for r in line.restarts],
        )
        assert line.pss_growth.verdict != "too_short"
    line = on.trials[0].timeline
    assert line is not None
    served = on.trials[0].requests + (on.trials[0].warmup.requests if on.trials[0].warmup else 0)
    # Each worker restarts after max_requests + 0..jitter of its own requests (some after
    # the window closed are not seen): at least what the window's requests force, at
    # most what every request served could.
    least = on.trials[0].requests // (max_requests + jitter) - 2
    most = served // max_requests + 2
    assert least <= len(line.restarts) <= most, (len(line.restarts), least, most)
    assert len(line.restarts) >= 2
    pids = [r.pid for r in line.restarts]
    assert len(set(pids)) == len(pids) and not set(pids) & set(line.workers_at_start)
    # Birth times are the processes' own start times (to the 10 ms tick); one born as
    # the window opened, before the watcher's first listing, may read a little early.
    assert all(-0.2 <= r.t <= 31 for r in line.restarts), [r.t for r in line.restarts]
    assert sum(len(r.replaced) for r in line.restarts) >= len(line.restarts) - 2
    # Presenters: console, report and guide all show it.
    assert "worker restart(s)" in out
    runs = [analysis.load_run(path)]
    text = report.markdown(runs)
    assert (
        "## Soak: gunicorn-sync{" not in text
        and "## Soak: gunicorn-sync recycle=max-requests" in text
    )
    assert "restart at s" in text
    words = guide.markdown(runs[0])
    assert "Worker recycling and memory over time (soak)" in words
    assert "gunicorn-sync: by requests (max_requests + jitter)" in words


def test_trend_on_the_noise_of_recorded_soaks() -> None:
    """False "grows" at most 5% even if the noise of recorded soaks (two 10-minute soaks
    here, PSS every 2 s) were as persistent as AR(0.99); a 20 MiB/h leak caught in a
    10-minute soak at the persistence actually seen (lag-1 0.01 and 0.74)."""
    from loadtests import soak_trend

    sd, step = soak_trend.noise_of(json.loads(soak_trend.FIXTURE.read_text()))
    found = soak_trend.simulate(300, sd, step, seed=5)
    assert found[0.99][0] <= 0.06  # false "grows" (5% + one binomial sd at 300 runs)
    assert found[0.9][0] <= 0.05 and found[0.0][0] <= 0.02
    assert found[0.0][1] >= 0.95 and found[0.9][1] >= 0.85  # the leak caught
