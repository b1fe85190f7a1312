"""runbench's timed run end to end, on real servers with short windows."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.core.management import CommandError, call_command

from djbench.measure.drivers import DRIVERS
from djbench.results import schema
from djbench.results import store as results
from tests.live import ROOT, still_running, watch_children

pytestmark = pytest.mark.servers

SHORT = ["--no-setup", "--duration", "0.6", "--warmup", "0.2", "--ws-idle", "0"]


def run(*args: str) -> str:
    out = StringIO()
    call_command("runbench", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def only_file(folder: Path) -> dict[str, Any]:
    """The run's file as written (plain JSON), after checking that the model reads it and
    that it validates against the published JSON Schema."""
    [path] = folder.glob("*.json")
    results.load(path)
    data = json.loads(path.read_text())
    jsonschema.validate(data, json.loads(schema.PATH.read_text()))
    return dict(data)


def check_entry(entry: dict[str, Any], trials: int) -> None:
    assert entry["status"] == "ok", entry["reason"]
    assert entry["reason"] is None
    assert len(entry["trials"]) == trials
    for trial in entry["trials"]:
        assert trial["valid"] and trial["requests"] > 0 and trial["rps"] > 0
        lat = trial["latency_ms"]
        assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p999"] <= lat["max"]
        assert trial["memory_mb"]["pss_peak"] > 0
        assert trial["memory_mb"]["pss_peak"] <= trial["memory_mb"]["rss_peak"]
        assert trial["driver_command"]["shell"]
        assert trial["machine"]["steal_percent"] >= 0  # the machine's state, per window
    memory = entry["memory_mb"]
    assert memory["pss_idle"] > 0 and memory["pss_peak"] >= memory["pss_idle"] * 0.5
    assert memory["uss_peak"] <= memory["pss_peak"] <= memory["rss_peak"]
    assert memory["processes"] >= 1
    assert entry["summary"]["rps"]["n"] == trials
    assert entry["command"]["server"]["shell"]
    assert entry["verify"]["status"] == "ok"


@pytest.mark.parametrize("driver", ["builtin", "wrk"])
def test_end_to_end_wsgi_and_asgi(driver: str, live_database: str, tmp_path: Path) -> None:
    from django.db import connection

    if driver == "wrk" and connection.vendor != "sqlite":
        pytest.skip("the wrk driver is independent of the database: the SQLite pass only")
    if driver == "wrk" and not DRIVERS["wrk"].available():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("wrk is not installed (CI=true: .ci/run installs it)")
        pytest.skip("wrk is not installed")
    out = run(
        "--servers",
        "gunicorn-gthread,uvicorn",
        "--scenarios",
        "health-sync,movies-async",
        "--trials",
        "2",
        "--driver",
        driver,
        "--output",
        str(tmp_path),
        *SHORT,
    )
    document = only_file(tmp_path)
    assert document["status"] == "complete"
    assert document["plan"]["driver"] == driver
    assert document["plan"]["keep_alive"] is True
    env = document["environment"]
    assert env["django"] and env["python"] and env["cpu_count"] and env["database"]["vendor"]
    assert env["packages"]["gunicorn"] and env["packages"]["uvicorn"]
    assert len(document["results"]) == 4
    for entry in document["results"]:
        check_entry(entry, trials=2)
        assert entry["driver"] == driver
        for trial in entry["trials"]:
            # Memory sampled over the load window itself: its first and last readings
            # come within a few polls of the window's announced (builtin) or process
            # (wrk) edges, never before the window opened.
            memory = trial["memory_mb"]
            assert 0 <= memory["opened_late_s"] < 0.25, memory
            assert 0 <= memory["closed_late_s"] < 0.25, memory
            assert trial["warmup"]["seconds"] >= 0.2
            assert trial["warmup"]["same_process"] is (driver == "builtin")
            if driver == "builtin":
                assert trial["in_flight_source"] == "driver"
                assert trial["window_edge_bound"] is None
            else:
                assert trial["in_flight_source"] == "littles_law"
                assert trial["window_edge_bound"] > 0
    # Interleaved: each round starts each deployment; rounds are recorded. Both alive side
    # by side, their windows taking turns (--pairing's default): every round on SQLite;
    # on PostgreSQL round 1 back to back, where it reads who keeps connections open after
    # its load, and round 2 side by side unless one did (it would run alone: with
    # CONN_MAX_AGE 0, gunicorn-gthread's were read still closing once, 2 of them).
    assert len(document["deployment_rounds"]) == 4
    beside = {(r["deployment"], r["round"]): r["beside"] for r in document["deployment_rounds"]}
    first = connection.vendor == "sqlite"
    held = any(
        (t["resources"]["db"] or {}).get("after")
        for e in document["results"]
        for t in e["trials"]
        if t["round"] == 0 and t["resources"]
    )
    assert beside == {
        ("gunicorn-gthread", 0): ["uvicorn"] if first else [],
        ("uvicorn", 0): ["gunicorn-gthread"] if first else [],
        ("gunicorn-gthread", 1): [] if held else ["uvicorn"],
        ("uvicorn", 1): [] if held else ["gunicorn-gthread"],
    }
    assert "round 2 of 2: 2 deployment(s), in a fresh order, side by side" in out
    assert ("round 1 of 2: 2 deployment(s), in a fresh order, side by side" in out) is first
    for record in document["deployment_rounds"]:  # what an idle neighbour cost, measured
        idle = record["beside_cpu_percent"]
        assert 0 <= idle < 50 if record["beside"] else idle is None, record
    for record in document["deployment_rounds"]:
        assert 0 < record["startup_seconds"] < 60
        assert record["idle"]["pss"] > 0 and record["after"]["pss"] > 0
    assert "health-sync" in out and "req/s per 100 MiB" in out
    assert f"Results: {tmp_path}" in out


def test_websocket_echo_and_idle_connections(live_database: str, tmp_path: Path) -> None:
    run(
        "--servers",
        "uvicorn",
        "--scenarios",
        "ws-echo",
        "--trials",
        "1",
        "--output",
        str(tmp_path),
        "--no-setup",
        "--duration",
        "0.6",
        "--warmup",
        "0",
        "--ws-idle",
        "200",
    )
    [entry] = only_file(tmp_path)["results"]
    check_entry(entry, trials=1)
    assert entry["driver"] == "wsload"
    idle = entry["ws_idle"]
    assert idle["opened"] == 200
    assert idle["pss_with_mb"] > idle["pss_before_mb"]
    assert idle["per_connection_kb"] > 0


def test_an_expected_4xx_is_not_an_error(live_database: str, tmp_path: Path) -> None:
    # Verified as answering 422 (what the scenario expects), then loaded: every response
    # is the expected 422, so none is an error (expect.status decides, for every driver).
    scenario_file = tmp_path / "errors.toml"
    scenario_file.write_text(
        'version = 1\nhealth_path = "/api/sync/health"\n[[scenario]]\nname = "bad-page"\n'
        'path = "/api/sync/movies?page=0"\nexpect = { status = 422 }\n'
    )
    run(
        "--servers",
        "uvicorn",
        "--scenario-file",
        str(scenario_file),
        "--trials",
        "1",
        "--output",
        str(tmp_path / "out"),
        *SHORT,
    )
    [entry] = only_file(tmp_path / "out")["results"]
    assert entry["status"] == "ok"
    [trial] = entry["trials"]
    assert trial["valid"] and trial["unexpected_status"] == 0 and trial["error_rate"] == 0
    assert trial["status"] == {"422": trial["requests"]} and trial["non_2xx"] == trial["requests"]


def test_bad_load_options(tmp_path: Path) -> None:
    for args, message in [
        (["--concurrency", "0"], "--concurrency takes whole numbers of at least 1"),
        (["--duration", "0"], "--duration takes seconds above 0"),
        (["--driver", "ab"], "unknown driver 'ab'; valid: auto, wrk, builtin"),
        (["--resume", "nope"], "--resume nope:"),
    ]:
        with pytest.raises(CommandError) as caught:
            run("--servers", "uvicorn", "--output", str(tmp_path), "--no-setup", *args)
        assert message in str(caught.value)
        assert caught.value.returncode == 2


def test_sigint_keeps_results_and_resume_finishes(
    live_database: str, tmp_path: Path, one_pass: None
) -> None:
    argv = [
        sys.executable,
        "manage.py",
        "runbench",
        "--servers",
        "uvicorn,gunicorn-sync",
        "--scenarios",
        "health-sync",
        "--trials",
        "3",
        "--output",
        str(tmp_path),
        *SHORT,
    ]
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def two_trials_saved(seen: object) -> bool:
        for path in tmp_path.glob("*.json"):
            try:
                document = json.loads(path.read_text())
            except ValueError:
                return False
            return sum(len(e["trials"]) for e in document.get("results", [])) >= 2
        return False

    seen = watch_children(proc.pid, until=two_trials_saved)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "--resume" in err and "Traceback" not in err
    time.sleep(0.2)
    assert still_running(seen) == []

    partial = only_file(tmp_path)
    assert partial["status"] == "interrupted"
    done = sum(len(e["trials"]) for e in partial["results"])
    assert 2 <= done < 6

    # Options that disagree with the run's are refused before anything starts.
    with pytest.raises(CommandError) as caught:
        run("--resume", partial["run_id"], "--output", str(tmp_path), "--trials", "5")
    assert caught.value.returncode == 2
    assert "--trials 5 (the run has 3)" in str(caught.value)
    assert only_file(tmp_path) == partial  # nothing written

    run("--resume", partial["run_id"], "--output", str(tmp_path), "--no-setup")
    finished = only_file(tmp_path)
    assert finished["status"] == "complete"
    assert finished["run_id"] == partial["run_id"]
    for entry in finished["results"]:
        assert sorted(t["round"] for t in entry["trials"]) == [0, 1, 2]
    with pytest.raises(CommandError, match="already complete"):
        run("--resume", partial["run_id"], "--output", str(tmp_path), "--no-setup")


def test_compare_two_real_short_runs(live_database: str, tmp_path: Path, one_pass: None) -> None:
    for name in ("base", "new"):
        run(
            "--servers",
            "uvicorn",
            "--scenarios",
            "health-sync",
            "--trials",
            "2",
            "--output",
            str(tmp_path / name),
            *SHORT,
        )
    [base] = (tmp_path / "base").glob("*.json")
    [new] = (tmp_path / "new").glob("*.json")
    out = StringIO()
    code = 0
    try:
        call_command("benchcompare", str(base), str(new), stdout=out)
    except CommandError as exc:  # two separate runs of the same code can still differ
        code = exc.returncode
    text = " ".join(out.getvalue().split())  # the table's title wraps
    # Two real files, judged end to end: one pair, a verdict, the method named; exit 1
    # only with "worse".
    assert "Welch t on log trial values" in text
    [verdict] = re.findall(r": 1 (worse|better|equivalent|inconclusive|not comparable)", text)
    assert code == (1 if verdict == "worse" else 0), text
