"""Issue 54: a real site gets an answer. A `startproject` site with every case
(tests/realsite.py): an endpoint its clients call that writes, a page those writes
change, pages under two models' `code`, a uWSGI file written for a container, a new
database connection per request."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from scipy.stats import binom

from djbench.launch import datastate
from djbench.launch.live import Deployment
from djbench.measure.dbconnect import median_interval
from djbench.measure.drivers import DRIVERS
from djbench.measure.trial import LoadSettings
from djbench.plan.owncommands import OwnCommand
from djbench.plan.scenarios import Expect, Request, Scenario
from djbench.results.plan_model import DataRecord
from djbench.run.pilot_fit import reshaped
from djbench.run.roundplan import Plan
from djbench.run.variants import driver_refused
from djbench.servers import SERVERS, installmoves, uwsgi
from tests.realsite import UWSGI_INI, real_site, site_env


def test_a_container_s_uwsgi_file_runs_from_the_project_with_each_change_said(
    tmp_path: Path,
) -> None:
    (tmp_path / "static-collected").mkdir()
    found = uwsgi.container_file(UWSGI_INI.splitlines(), tmp_path)
    said = "\n".join(found.changes)
    assert "chdir = /opt/monitor: not here; the project's folder instead" in said
    assert said.count("attach-daemon") == 2 and "not started" in said
    assert "hook-pre-app = exec:./manage.py migrate: not run" in said
    assert "uid = monitor: runs as the user who runs runbench" in said
    assert f"static-map = /static={tmp_path / 'static-collected'}" in found.lines
    assert f"chdir = {tmp_path}" in found.lines
    assert not any(
        line.startswith(("attach-daemon", "hook-pre-app", "uid")) for line in found.lines
    )
    assert found.keep_alive is False and "new connection per request" in found.changes[-1]
    # Keep-alive as the file does it: asked for, or a socket that keeps connections.
    kept = uwsgi.container_file(["[uwsgi]", "http-socket = :80", "http-keepalive = 1"], tmp_path)
    assert kept.keep_alive and not kept.changes
    assert uwsgi.container_file(["[uwsgi]", "http11-socket = :80"], tmp_path).keep_alive
    assert uwsgi.container_file(["[uwsgi]", "socket = :80"], tmp_path).keep_alive


def test_a_server_that_closes_silently_is_loaded_with_a_connection_per_request() -> None:
    own = OwnCommand(name="yours-uwsgi", server="uwsgi", command="uwsgi x.ini", found_in="",
                     keep_alive=False)  # fmt: skip
    closes = Deployment(server=SERVERS["uwsgi"], own=own)
    assert closes.closes_connections
    assert not Deployment(server=SERVERS["uwsgi"], own=own, proxy="caddy").closes_connections
    refused = driver_refused(closes, DRIVERS["wrk"])
    assert refused is not None and "would count each close as a failed request" in str(
        refused.params
    )
    assert driver_refused(closes, DRIVERS["builtin"]) is None


def test_the_median_s_interval_holds_its_confidence_by_order_statistics() -> None:
    values = [float(v) for v in range(1, 22)]  # 21 connects
    low, high = median_interval(values)
    assert (low, high) == (6.0, 16.0)
    # The coverage of [X(6), X(16)] for the median of 21 draws, by the binomial.
    assert binom.cdf(15, 21, 0.5) - binom.cdf(5, 21, 0.5) >= 0.95


def test_the_variable_a_setting_is_read_from_is_found_only_in_an_environment_read() -> None:
    from djbench.measure.dbconnect import _VARIABLE

    lines = {
        'conn_max_age = 0 if pool else env_int("DB_CONN_MAX_AGE", 0)': ["DB_CONN_MAX_AGE"],
        "'CONN_MAX_AGE': 0}}": [],  # a key of DATABASES, not a variable
        'CONN_MAX_AGE = int(os.environ.get("CONN_AGE", 60))': ["CONN_AGE"],
        'CONN_MAX_AGE = env.int("DB_AGE")': ["DB_AGE"],
        'CONN_MAX_AGE = int(os.getenv("AGE"))': ["AGE"],
    }
    assert {line: _VARIABLE.findall(line) for line in lines} == lines


def test_the_planned_rounds_are_fitted_to_the_budget_before_the_first_window() -> None:
    scenario = Scenario(name="home", endpoint="home", variant="sync", kind="http",
                        request=Request(path="/"), expect=Expect())  # fmt: skip
    plan = Plan(
        deployments=[Deployment(server=SERVERS[n]) for n in ("uwsgi", "uvicorn", "daphne")],
        scenarios=[scenario, scenario],
        concurrency=[8],
        trials=3,
        settings=LoadSettings(duration=8.0, warmup=1.0, driver_cpus=(1,)),
        driver=DRIVERS["builtin"],
        health_path="/",
    )
    lines: list[str] = []

    class Show:
        def line(self, text: str) -> None:
            lines.append(text)

    # A window: 8 s + 1 s warm-up + 0.5 s for the driver; a round: 3 lifetimes of 5 s
    # + 2 windows = 72 s; the gates 3 x 6 s.
    fitted, asked = reshaped(Show(), plan, 170.0)  # type: ignore[arg-type]
    assert (fitted.trials, asked) == (2, 3)
    assert "2 round(s) fit, not the planned 3" in lines[-1] and "about 72 s a round" in lines[-1]
    kept, asked = reshaped(Show(), plan, 600.0)  # type: ignore[arg-type]
    assert (kept.trials, asked) == (3, None) and "3 planned round(s)" in lines[-1]
    # Too short for two rounds at the fitted windows: shortened (by tenths) until two fit.
    two, asked = reshaped(Show(), plan, 130.0)  # type: ignore[arg-type]
    assert (two.trials, asked, two.settings.duration, two.settings.warmup) == (2, 3, 5.6, 0.7)
    assert "shortened to 5.6 s after 0.7 s warm-up (fitted: 8 s after 1 s" in lines[-1]
    # Half the window does not buy two (a round 45 s + the gates 18 s): screen windows,
    # said as such (the six-page startproject site's case).
    screen, asked = reshaped(Show(), plan, 100.0)  # type: ignore[arg-type]
    assert (screen.trials, asked, screen.settings.duration) == (2, 3, 3.2)
    assert "screen windows, 40% of the answers the fit asked for" in lines[-1]
    one, _ = reshaped(Show(), plan, 10.0)  # type: ignore[arg-type]
    assert one.trials == 1 and "a screen, not a ranking" in lines[-1]  # never fewer than one


def test_the_project_s_pins_are_read_from_requirements_and_lock_files(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(
        "Django==5.2.1  # web\ncryptography[ssh]==51.0.1 ; python_version >= '3.9'\nrich>=13\n"
    )
    (tmp_path / "uv.lock").write_text(
        '[[package]]\nname = "Django"\nversion = "5.1"\n[[package]]\nname = "idna"\n'
        'version = "3.10"\n'
    )
    assert installmoves.pins(tmp_path) == {
        "django": ("5.2.1", "requirements.txt"),
        "cryptography": ("51.0.1", "requirements.txt"),
        "idna": ("3.10", "uv.lock"),
    }


def test_a_security_library_a_server_moved_back_is_named_with_its_extra(tmp_path: Path) -> None:
    """Here Daphne's Twisted[tls] needs pyOpenSSL, which caps cryptography: a project
    pinning a cryptography above that cap had it moved back by djbench[daphne]."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.version import Version

    try:
        caps = [Requirement(r) for r in metadata.requires("pyopenssl") or []]
    except metadata.PackageNotFoundError:
        pytest.skip("pyOpenSSL is not installed here")
    cap = next((r for r in caps if r.name == "cryptography"), None)
    upper = [s for s in cap.specifier if s.operator == "<"] if cap else []
    if not upper:
        pytest.skip("pyOpenSSL does not cap cryptography here")
    above = str(Version(upper[0].version))
    (tmp_path / "requirements.txt").write_text(f"cryptography=={above}\n")
    [moved] = installmoves.moved(tmp_path)
    assert (moved.package, moved.pinned, moved.extra) == ("cryptography", above, "daphne")
    assert moved.security and moved.required_by.startswith("pyopenssl (cryptography")


def test_every_lifetime_starts_on_a_copy_of_the_same_sqlite_data(tmp_path: Path) -> None:
    original = tmp_path / "db.sqlite3"
    with sqlite3.connect(original) as db:
        db.execute("CREATE TABLE ping (id INTEGER PRIMARY KEY)")
    record = DataRecord(method="copied", vendor="sqlite", writes=["ping"])
    state = datastate._sqlite(tmp_path / "run", str(original), record)
    try:
        for _ in range(2):
            state.fresh()
            copy = datastate.os.environ[datastate.ENV]
            with sqlite3.connect(copy) as db:
                assert db.execute("SELECT count(*) FROM ping").fetchone() == (0,)
                db.execute("INSERT INTO ping DEFAULT VALUES")  # the lifetime's writes
    finally:
        state.close()
    assert record.lifetimes == 2 and datastate.ENV not in datastate.os.environ
    with sqlite3.connect(original) as db:
        assert db.execute("SELECT count(*) FROM ping").fetchone() == (0,)
    assert not (tmp_path / "run" / "data").exists()


def _manage(root: Path, env: dict[str, str], *argv: str, timeout: int = 600) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *argv], cwd=root, env=env, capture_output=True,
        text=True, timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _pings(root: Path, database_url: str | None) -> int:
    if database_url is None:
        with sqlite3.connect(root / "db.sqlite3") as db:
            return int(db.execute("SELECT count(*) FROM monitor_ping").fetchone()[0])
    import psycopg

    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT count(*) FROM monitor_ping").fetchone()
        return int(row[0]) if row else 0


def _benchinit(root: Path, env: dict[str, str]) -> dict[str, object]:
    said = " ".join(_manage(root, env, "benchinit", "--force").split())
    assert "ping: GET /ping/" in said and "writes (changes rows)" in said
    assert "project-detail: GET /projects/" in said and "-> 200" in said
    assert "chdir = /opt/monitor: not here; the project's folder instead" in said
    assert "ping: an endpoint that writes: what the site's clients call" in said
    return tomllib.loads((root / "loadtests" / "default.toml").read_text())


@pytest.mark.servers
def test_a_real_site_is_found_verified_and_measured_on_the_same_data(
    tmp_path: Path, one_pass: None
) -> None:
    """benchinit with no --sample-values finds the write endpoint and both models'
    pages, names them by route and keeps markers the writes do not change; the team's
    container uWSGI file verifies; a short run measures it with a new connection per
    request and no failure counted, every lifetime on a copy of the data, the project's
    database left as found, and a connection per request measured and said."""
    for name in ("uwsgi", "gunicorn-sync"):
        if SERVERS[name].missing():
            pytest.skip(f"{name} is not installed")
    env = site_env(tmp_path)
    root = real_site(tmp_path / "site", env)
    written = _benchinit(root, env)
    scenarios = {s["name"]: s for s in written["scenario"]}  # type: ignore[union-attr]
    assert set(scenarios) >= {"home", "ping", "check-detail", "project-detail", "api-csrf"}
    assert scenarios["ping"]["writes"] is True and "writes" not in scenarios["check-detail"]
    assert scenarios["check-detail"]["expect"]["contains"] == ["| Monitor</title>"]
    assert written["profiles"]["default"][:2] == ["home", "ping"]  # type: ignore[index]
    assert written["profiles"]["default"][-1] == "api-csrf"  # type: ignore[index]
    [own] = written["deployment"]  # type: ignore[misc]
    assert own["keep_alive"] is False and len(own["changes"]) == 7
    before = _pings(root, None)
    out = tmp_path / "out"
    said = _manage(
        root, env, "runbench", "--servers", "yours-uwsgi,gunicorn-sync",
        "--scenarios", "ping,check-detail", "--trials", "1", "--duration", "1",
        "--warmup", "0.3", "--concurrency", "4", "--output", str(out),
    )  # fmt: skip
    assert _pings(root, None) == before  # the project's data as found
    [path] = out.glob("*.json")
    document = json.loads(path.read_text())
    data = document["plan"]["data"]
    assert data["method"] == "copied" and data["writes"] == ["ping"]
    assert data["lifetimes"] >= 4  # two gates and two timed lifetimes, each on a copy
    yours = [e for e in document["results"] if e.get("own") == "yours-uwsgi"]
    assert yours and all(e["status"] == "ok" for e in yours)
    for entry in yours:
        trial = entry["trials"][0]
        assert trial["errors"].get("read", 0) == 0 and trial["requests"] > 0
    connections = document["plan"]["connections"]
    assert connections["pages"] == ["ping", "check-detail"] and connections["median_ms"] > 0
    text = " ".join(said.split())
    assert "Database: CONN_MAX_AGE 0" in text and "To save it: CONN_MAX_AGE 60" in text
    assert "--axis" not in text  # the site's settings read no variable for it
    assert "every server lifetime started on the same data" in text
    assert "closes every connection: measured with a new connection per request" in text
    [guide] = out.glob("*.guide.md")
    head = guide.read_text().split("## Answer")[0]
    assert "channel layer none" in head and "1 round(s), 1 s windows" in head
    assert " ?" not in head and "?," not in head  # words true to the run, never "?"
    assert "## Your deployments, as djbench ran them" in guide.read_text()


@pytest.mark.servers
def test_on_postgresql_each_lifetime_gets_a_template_copy(
    tmp_path: Path, postgres_url: str
) -> None:
    """The same site on PostgreSQL (CONN_MAX_AGE 0): verified on copies made with
    CREATE DATABASE ... TEMPLATE, the project's database left as found, the copies
    dropped at the end."""
    import psycopg
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("makes a PostgreSQL database of its own: runs in the PostgreSQL pass")
    name = f"djbench_site_{abs(hash(str(tmp_path))) % 10**8}"
    admin = postgres_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = f"{admin.rsplit('/', 1)[0]}/{name}"
    try:
        env = site_env(tmp_path)
        root = real_site(tmp_path / "site", env, url)
        _benchinit(root, env)
        before = _pings(root, url)
        out = tmp_path / "out"
        _manage(root, env, "runbench", "--verify-only", "--servers", "yours-uwsgi,uwsgi",
                "--output", str(out))  # fmt: skip
        assert _pings(root, url) == before
        [path] = out.glob("*.json")
        data = json.loads(path.read_text())["plan"]["data"]
        assert data["method"] == "copied" and "TEMPLATE" in data["how"]
        with psycopg.connect(admin, autocommit=True) as conn:
            left = conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s", (f"{name}_djbench%",)
            ).fetchall()
        assert left == []
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_planned_round_starts_only_when_the_whole_of_it_fits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--budget: after the first, a planned round is run whole or not at all, judged by
    the lifetimes before it without their gates (a fake clock: 10 s a lifetime, 4 s a
    gate)."""
    from types import SimpleNamespace

    from djbench.run import runner

    clock = [0.0]
    runs: list[tuple[str, int]] = []

    def lifetime(bench, deployment, round_index, pending, gates):  # type: ignore[no-untyped-def]
        gate = 0.0 if deployment.label in gates else 4.0
        gates[deployment.label] = {}
        clock[0] += gate + 10.0
        runs.append((deployment.label, round_index))
        return gate

    monkeypatch.setattr(runner.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(runner, "_run_deployment", lifetime)
    monkeypatch.setattr(runner, "known_gates", lambda plan, recorder: {})
    monkeypatch.setattr(runner, "_pending", lambda *a: [("page", 1)])
    scenario = Scenario(name="home", endpoint="home", variant="sync", kind="http",
                        request=Request(path="/"), expect=Expect())  # fmt: skip
    plan = Plan(
        deployments=[Deployment(server=SERVERS[n]) for n in ("uwsgi", "uvicorn", "daphne")],
        scenarios=[scenario], concurrency=[1], trials=3,
        settings=LoadSettings(duration=1.0, warmup=1.0, driver_cpus=(1,)),
        driver=DRIVERS["builtin"], health_path="/",
    )  # fmt: skip
    said: list[str] = []
    bench = SimpleNamespace(
        plan=plan,
        recorder=SimpleNamespace(trials_in_round=lambda d, r: 0),
        progress=SimpleNamespace(say=said.append, advance=lambda n, label: None),
    )
    # Round 1: 3 x 14 s = 42 s; round 2 would end at 72 s; round 3 at 102 s > 100.
    begun = runner.run_benchmark(bench, stop_at=100.0, whole_rounds=True)  # type: ignore[arg-type]
    assert begun == 2 and [r for _, r in runs] == [0, 0, 0, 1, 1, 1]
    clock[0], runs[:] = 0.0, []
    # Without whole_rounds, round 3 starts and is cut in its middle (as before).
    runner.run_benchmark(bench, stop_at=95.0)  # type: ignore[arg-type]
    assert [r for _, r in runs].count(2) == 2


def test_a_copy_that_fails_fails_that_server_s_start_in_a_sentence() -> None:
    from djbench.launch.process import ServerError

    def refused() -> str:
        raise OSError("No space left on device")

    state = datastate.DataState(DataRecord(method="copied", vendor="sqlite"), refused)
    with pytest.raises(ServerError, match="could not be copied for this lifetime: No space"):
        state.fresh()
    assert datastate.ENV not in datastate.os.environ and state.record.lifetimes == 0
