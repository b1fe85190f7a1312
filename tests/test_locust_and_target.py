"""--driver locust (a master and two workers) and --target (a server djbench did not
start), on loopback only; the refusals for anything outside it; Locust output that
cannot be used, as a sentence."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import psutil
import pytest
from django.core.management import CommandError, call_command

from djbench.launch.process import free_port
from djbench.measure.drivers import DRIVERS, DriverError
from djbench.measure.drivers.locust import MARKER, LocustDriver
from djbench.results import store
from djbench.results.driver_model import DriverFigures
from tests.accesslog import access_log_config, assert_counted
from tests.live import ROOT


def _need_locust() -> None:
    if not DRIVERS["locust"].available():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail('Locust is not installed (CI=true: make venv installs "djbench[locust]")')
        pytest.skip('Locust is not installed: pip install "djbench[locust]"')


@pytest.fixture
def own_server(live_database: str, tmp_path: Path) -> Iterator[tuple[str, int, Path]]:
    """A gunicorn started by the test (not by djbench), with an access log."""
    port = free_port()
    log, config = access_log_config(tmp_path)
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--log-config-json",
            str(config),
            "sampleproject.wsgi:application",
        ],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "sampleproject.settings"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/api/sync/health", timeout=2):
                break
        except OSError:
            time.sleep(0.1)
    try:
        yield url, proc.pid, log
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def run(*args: str) -> str:
    out = StringIO()
    call_command("runbench", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.servers
def test_locust_master_and_two_workers_agree_with_the_servers_access_log(
    own_server: tuple[str, int, Path], tmp_path: Path, one_pass: None
) -> None:
    _need_locust()
    url, pid, log = own_server
    out = run(
        "--target",
        url,
        "--target-pid",
        str(pid),
        "--driver",
        "locust",
        "--locust-workers",
        "2",
        "--scenarios",
        "health-sync",
        "--trials",
        "1",
        "--duration",
        "2",
        "--warmup",
        "1",
        "--concurrency",
        "8",
        "--ws-idle",
        "0",
        "--output",
        str(tmp_path / "out"),
    )
    assert f"Sending load to {url} (not started by djbench)" in out
    [path] = (tmp_path / "out").glob("*.json")
    document = store.load(path)
    [entry] = document.results
    assert entry.server == "target" and entry.status == "ok", entry.reason
    assert entry.driver == "locust"
    [trial] = entry.trials
    assert trial.valid and trial.requests > 100
    extra = trial.driver_figures
    assert extra.workers_reported == extra.workers_expected == 2
    # Microsecond latencies, not Locust's whole-millisecond buckets.
    assert trial.latency_ms.p50 is not None and trial.latency_ms.p50 != round(trial.latency_ms.p50)
    # The server was not started by djbench: its memory was read from --target-pid, and
    # it is still running after the run.
    assert trial.memory_mb is not None and trial.memory_mb.pss_peak > 0
    assert psutil.pid_exists(pid)
    # The requests counted in the window are the ones the server answered in it (its
    # access log, stamped to the microsecond, Locust's user agent), within 0.5%; and
    # over the whole run Locust's own total is the log's.
    time.sleep(0.5)
    assert_counted(log, extra.windows_wall or [], trial.requests)
    lines = [ln for ln in log.read_text().splitlines() if "gevent-http-client" in ln]
    counted = extra.locust_total_requests
    assert abs(len(lines) - counted) <= 0.005 * counted, (len(lines), counted)
    # The exact command is recorded, and it ran Locust with two workers on loopback.
    assert trial.driver_command is not None
    assert "--processes 2" in trial.driver_command.shell
    assert "--master-bind-host 127.0.0.1" in trial.driver_command.shell


@pytest.mark.servers
def test_target_runs_the_gate_and_never_stops_the_server(
    own_server: tuple[str, int, Path], tmp_path: Path
) -> None:
    url, pid, _ = own_server
    out = run(
        "--target",
        url,
        "--scenarios",
        "health-sync,movies-sync",
        "--trials",
        "1",
        "--duration",
        "0.5",
        "--warmup",
        "0.2",
        "--ws-idle",
        "0",
        "--output",
        str(tmp_path / "out"),
    )
    [path] = (tmp_path / "out").glob("*.json")
    document = store.load(path)
    assert {e.scenario: e.status for e in document.results} == {
        "health-sync": "ok",
        "movies-sync": "ok",
    }
    assert all(e.verify and e.verify.status == "ok" for e in document.results)
    # No --target-pid: no memory figures rather than someone else's.
    assert all(t.memory_mb is None for e in document.results for t in e.trials)
    assert document.results[0].command["target"].shell == url
    # Hops come from running this project's views in-process: not the target's.
    assert all(meta.asgi_hops is None for meta in document.plan.scenarios.values())
    assert psutil.pid_exists(pid) and "Results:" in out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--target", "http://192.0.2.10:8000"], "outside loopback: add --allow-remote-target"),
        (["--target", "https://127.0.0.1:8000"], "takes an http:// URL"),
        (["--target", "http://127.0.0.1:8000", "--servers", "uvicorn"], "starts no server"),
        (
            ["--target", "http://127.0.0.1:8000", "--axis", "DB_POOL=0,1", "--workers", "4"],
            "--axis, --workers change nothing in a deployment djbench did not start",
        ),
        (["--target", "http://127.0.0.1:8000", "--churn", "reload"], "leave out --target"),
        (
            ["--target", "http://192.0.2.10:8000", "--allow-remote-target", "--target-pid", "1"],
            "loopback targets only",
        ),
        (
            ["--driver", "locust", "--locust-master-bind", "0.0.0.0"],
            "outside loopback: workers on other machines",
        ),
        (["--locust-master-bind", "127.0.0.1"], "is for --driver locust"),
        (["--driver", "locust", "--locust-workers", "0"], "--locust-workers takes a count"),
        (
            ["--driver", "locust", "--locust-expect-workers", "2"],
            "--locust-expect-workers goes with --locust-master-bind",
        ),
        (
            ["--driver", "locust", "--locust-master-bind", "127.0.0.1", "--locust-workers", "2"],
            "say how many with --locust-expect-workers",
        ),
        (["--driver", "locust", "--locust-master-bind", "127.0.0.1:x"], "HOST or HOST:PORT"),
        (["--advertise-host", "192.0.2.10"], "outside loopback: servers would listen"),
        (
            ["--target", "http://127.0.0.1:8000", "--advertise-host", "127.0.0.1"],
            "not with --target",
        ),
    ],
)
def test_refusals_are_one_line(args: list[str], words: str, tmp_path: Path) -> None:
    if "locust" in args and "--locust-workers" not in args:
        _need_locust()
    with pytest.raises(CommandError, match=words) as caught:
        run("--no-setup", "--output", str(tmp_path), *args)
    assert caught.value.returncode == 2 and "\n" not in str(caught.value)


def test_unusable_locust_output_is_a_sentence() -> None:
    driver = LocustDriver()
    with pytest.raises(DriverError, match="Locust printed no result line"):
        driver.parse("[2026-11-30 06:42:41] vm/INFO/locust.main: Shutting down (exit code 1)\n")
    with pytest.raises(DriverError, match="not JSON"):
        driver.parse(MARKER + '{"requests": 1\n')
    partial = (
        MARKER + '{"requests": 10, "non_2xx": 0, "unexpected": 0, "duration_s": 1.0, '
        '"errors": {}, "status": {"200": 10}, "latency_us": {"p50": 1500}, '
        '"workers_reported": 1, "workers_expected": 2}\n'
    )
    with pytest.raises(DriverError, match="only 1 of 2 Locust worker"):
        driver.parse(partial)
    whole = partial.replace('"workers_reported": 1', '"workers_reported": 2')
    result = driver.parse(whole)
    assert result.requests == 10 and result.latency_ms["p50"] == 1.5 and result.steady_window


def test_every_locust_user_runs_before_the_window_opens() -> None:
    """Issue 25 item 3: the spawn rate puts every user to work within half the warm-up
    (it was one user a connection per second: at --quick's 0.3 s warm-up, about a tenth
    of the users ran when the window opened), and a window that opens mid-ramp says so."""
    from djbench.measure.drivers.base import LoadResult
    from djbench.measure.drivers.locust import spawn_rate
    from djbench.measure.trial import Drive, LoadSettings, warnings_for
    from djbench.reports.words import say

    assert spawn_rate(32, 0.3) == pytest.approx(32 / 0.15)
    assert spawn_rate(32, 10.0) == 32.0  # never slower than before
    result = LoadResult(
        requests=500, duration_s=1.0, figures=DriverFigures(users_at_open=20, users_expected=32)
    )
    drive = Drive(output="", cpu_seconds=0.1, wall_seconds=1.0)
    notices = warnings_for(
        result, drive, 32, LoadSettings(1.0, 0.3, ()), True, driver_name="locust"
    )
    [ramp] = [n for n in notices if n.code == "ramp_in_window"]
    assert say(ramp).startswith("only 20 of 32 Locust users were running")
    full = LoadResult(
        requests=500, duration_s=1.0, figures=DriverFigures(users_at_open=32, users_expected=32)
    )
    assert "ramp_in_window" not in {
        n.code for n in warnings_for(full, drive, 32, LoadSettings(1.0, 0.3, ()), True)
    }


def test_a_saturated_locust_worker_is_flagged_with_the_workers_needed() -> None:
    """Issue 25 item 4: each worker measures its own CPU over its window; one at 90% of
    its core flags the trial, with how many workers the measured rate needs."""
    from djbench.measure.drivers.base import LoadResult
    from djbench.measure.trial import Drive, LoadSettings, warnings_for
    from djbench.reports.words import say

    drive = Drive(output="", cpu_seconds=0.1, wall_seconds=1.0)
    settings = LoadSettings(1.0, 0.3, (1,))
    busy = LoadResult(
        requests=900, duration_s=1.0, figures=DriverFigures(worker_cpu_percent=[97.0, 88.0])
    )
    [flag] = [
        n for n in warnings_for(busy, drive, 32, settings, True) if n.code.startswith("locust")
    ]
    assert flag.params == {"cpu_percent": 97.0, "workers": 2, "needed": 3}
    assert "this rate needs about 3 (--locust-workers)" in say(flag)
    calm = LoadResult(
        requests=900, duration_s=1.0, figures=DriverFigures(worker_cpu_percent=[61.0, 58.0])
    )
    assert not [n for n in warnings_for(calm, drive, 32, settings, True) if "locust" in n.code]


def test_a_lasting_masters_address_workers_and_versions() -> None:
    """Issue 25 item 1, the parts that need no worker: the bind address, the command a
    load machine runs, and workers whose Locust is not the master's refused by name."""
    from djbench.measure.drivers.locustmaster import (
        MasterError,
        check_versions,
        parse_bind,
        worker_command,
    )

    assert parse_bind("10.0.0.5") == ("10.0.0.5", 5557)
    assert parse_bind("10.0.0.5:6000") == ("10.0.0.5", 6000)
    assert parse_bind("[::1]:6000") == ("::1", 6000)
    for bad in ("10.0.0.5:x", ":5557", "10.0.0.5:70000"):
        with pytest.raises(ValueError, match="HOST or HOST:PORT"):
            parse_bind(bad)
    assert worker_command("10.0.0.5", 5557, "locust 2.47.0") == (
        'pip install "locust==2.47.0" hdrhistogram && '
        "locust --worker -f - --master-host 10.0.0.5 --master-port 5557"
    )
    same = {"master": "2.47.0", "hellos": {"b_1": {"locust": "2.47.0"}}}
    check_versions(same)
    other = {
        "master": "2.47.0",
        "hellos": {"b_1": {"locust": "2.47.0"}, "c_2": {"locust": "2.40.1"}},
    }
    expected = 'c_2 runs 2.40.1; on each: pip install "locust==2.47.0"'
    with pytest.raises(MasterError, match=re.escape(expected)):
        check_versions(other)


@pytest.mark.servers
def test_no_worker_joins_a_lasting_master_in_time(tmp_path: Path, one_pass: None) -> None:
    _need_locust()
    port = str(free_port())
    with pytest.raises(CommandError, match="0 of 2 Locust workers joined within 1 s") as caught:
        run(
            "--driver", "locust", "--locust-master-bind", f"127.0.0.1:{port}",
            "--locust-expect-workers", "2", "--locust-join-timeout", "1",
            "--servers", "gunicorn-sync", "--scenarios", "health-sync", "--no-setup",
            "--ws-idle", "0", "--output", str(tmp_path),
        )  # fmt: skip
    assert caught.value.returncode == 2 and "\n" not in str(caught.value)
    assert not [
        p for p in psutil.process_iter(["cmdline"]) if port in " ".join(p.info["cmdline"] or [])
    ]
