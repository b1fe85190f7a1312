"""Faults during a run, on live servers: each ends as a recorded failed/invalid pair or a
one-line error, nothing is left running, and what was measured before stays on disk."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from django.core.management import CommandError, call_command

from djbench.results import store
from tests import services
from tests.live import MARK, ROOT, census, marked, prepare, still_running, watch_children

pytestmark = pytest.mark.servers

SHORT = ["--no-setup", "--duration", "0.6", "--warmup", "0.2", "--ws-idle", "0", "--no-color"]


_STARTED: list[subprocess.Popen[str]] = []


def runbench(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "runbench", *SHORT, *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _STARTED.append(proc)
    return proc


@pytest.fixture(autouse=True)
def _stopped_after_the_test() -> Iterator[None]:
    """A test that fails before its run ended leaves nothing running: the runbench it
    started is sent SIGTERM (it stops its own servers), killed if it does not end."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()


def results(folder: Path) -> dict[str, Any] | None:
    for path in folder.glob("*.json"):
        with contextlib.suppress(ValueError, OSError):
            data: dict[str, Any] = json.loads(path.read_text())
            return data
    return None


def trials_saved(folder: Path) -> int:
    data = results(folder) or {}
    return sum(len(e["trials"]) for e in data.get("results", []))


def driving(seen: dict[int, psutil.Process]) -> bool:
    """A load driver is running (the builtin driver's process)."""
    for proc in seen.values():
        with contextlib.suppress(psutil.Error):
            if "djbench.measure.drivers.loadgen" in proc.cmdline() and proc.is_running():
                return True
    return False


def driven_port(seen: dict[int, psutil.Process]) -> int | None:
    """The port the running load driver loads (its --port)."""
    for proc in seen.values():
        with contextlib.suppress(psutil.Error):
            argv = proc.cmdline()
            if "djbench.measure.drivers.loadgen" in argv and proc.is_running():
                return int(argv[argv.index("--port") + 1])
    return None


def listens_on(proc: psutil.Process, port: int | None) -> bool:
    with contextlib.suppress(psutil.Error):
        return any(
            c.laddr.port == port and c.status == psutil.CONN_LISTEN
            for c in proc.net_connections(kind="tcp")
        )
    return False


def finish(proc: subprocess.Popen[str], seen: dict[int, psutil.Process]) -> tuple[str, str]:
    out, err = proc.communicate(timeout=180)
    deadline = time.monotonic() + 5
    while still_running(seen) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert still_running(seen) == [], "processes left behind"
    assert "Traceback" not in err, err
    return out, err


@contextlib.contextmanager
def small_filesystem(where: Path, megabytes: int) -> Iterator[Path]:
    """A tmpfs of `megabytes` at `where` (needs root: skipped, with the reason, elsewhere)."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        why = f"cannot mount a small file system here: {mounted.stderr.strip()}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{why} (CI=true: .ci/run runs as root)")
        pytest.skip(why)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> None:
    with (folder / "ballast").open("wb") as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 2**20)
            f.flush()


def test_an_output_folder_that_cannot_be_written_is_one_line_before_anything_starts(
    tmp_path: Path,
) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("not a folder")
    with pytest.raises(CommandError) as caught:
        call_command("runbench", "--servers", "uvicorn", "--output", str(a_file / "out"))
    assert caught.value.returncode == 2
    assert str(caught.value).startswith(f"--output: cannot write results in {a_file / 'out'}")
    with small_filesystem(tmp_path / "tiny", 1) as tiny:
        with pytest.raises(CommandError) as caught:
            call_command("runbench", "--servers", "uvicorn", "--output", str(tiny))
        assert caught.value.returncode == 2
        assert "MB free where the results go" in str(caught.value)
        assert "needs at least 50 MB" in str(caught.value)


def test_a_full_disk_mid_run_stops_with_a_sentence_and_keeps_what_was_saved(
    live_database: str, tmp_path: Path
) -> None:
    with small_filesystem(tmp_path / "out", 64) as out:
        proc = runbench(
            "--servers", "uvicorn", "--scenarios", "health-sync", "--trials", "5",
            "--output", str(out),
        )  # fmt: skip
        seen = watch_children(proc.pid, until=lambda _: trials_saved(out) >= 1, timeout=120)
        assert trials_saved(out) >= 1, "no trial was saved"
        fill(out)
        seen.update(watch_children(proc.pid, until=lambda _: False, timeout=0.5))
        _, err = finish(proc, seen)
        assert proc.returncode == 3, err  # could not complete (djbench.run.exits)
        assert "could not save the results" in err and "No space left on device" in err
        assert "--resume" in err
        [path] = list(out.glob("*.json"))
        saved = store.load(path)  # the last good version: intact, and loadable
        assert sum(len(e.trials) for e in saved.results) >= 1


def server_processes(seen: dict[int, psutil.Process], name: str) -> list[psutil.Process]:
    """The processes whose program is the server's own console script (`gunicorn`,
    `uvicorn`: argv[0], or argv[1] after a Python interpreter). Judged by the program's
    name, never by words anywhere in the command line: a clone's path can hold "djbench"
    or the server's name (the servers run from the clone's own .venv)."""
    found = []
    for proc in seen.values():
        with contextlib.suppress(psutil.Error):
            if any(Path(arg).name == name for arg in proc.cmdline()[:2]) and proc.is_running():
                found.append(proc)
    return found


def test_a_worker_killed_mid_trial_is_recorded_and_the_run_goes_on(
    live_database: str, tmp_path: Path, one_pass: None
) -> None:
    mark = f"worker-kill-{os.getpid()}-{time.monotonic_ns()}"
    proc = runbench(
        "--servers", "gunicorn-sync", "--workers", "2", "--scenarios", "health-sync",
        "--trials", "2", "--duration", "3", "--output", str(tmp_path), env={MARK: mark},
    )  # fmt: skip
    seen = watch_children(proc.pid, until=driving, timeout=120)
    time.sleep(1.0)  # inside the warm-up or the window
    during = len(marked(mark))
    gunicorns = server_processes(seen, "gunicorn")
    workers = [p for p in gunicorns if p.ppid() in {g.pid for g in gunicorns}]
    assert len(workers) == 2, gunicorns
    workers[0].send_signal(signal.SIGKILL)
    seen.update(watch_children(proc.pid, until=lambda _: False, timeout=0.5))
    finish(proc, seen)
    assert census("a gunicorn worker SIGKILLed mid-trial", mark, during) == 0
    document = results(tmp_path)
    assert document is not None and document["status"] == "complete"
    [entry] = document["results"]
    assert len(entry["trials"]) == 2  # the trial with the kill is recorded, the next ran
    for trial in entry["trials"]:
        assert trial["valid"] or trial["invalid"]["code"] == "too_many_errors"
    assert proc.returncode == (0 if entry["status"] == "ok" else 1)


def test_a_master_killed_mid_trial_fails_that_server_and_the_run_goes_on(
    live_database: str, tmp_path: Path, one_pass: None
) -> None:
    mark = f"master-kill-{os.getpid()}-{time.monotonic_ns()}"
    proc = runbench(
        "--servers", "gunicorn-sync,uvicorn", "--scenarios", "health-sync", "--trials", "2",
        "--duration", "3", "--output", str(tmp_path), env={MARK: mark},
    )  # fmt: skip
    seen = watch_children(proc.pid, until=driving, timeout=120)
    time.sleep(1.0)
    during = len(marked(mark))
    masters = [
        p
        for p in server_processes(seen, "gunicorn") + server_processes(seen, "uvicorn")
        if p.ppid() == proc.pid
    ]
    # Round 1 side by side (SQLite): both servers alive, one loaded. The master killed is
    # the one listening on the port the driver loads.
    loaded = [p for p in masters if listens_on(p, driven_port(seen))]
    assert len(loaded) == 1, masters
    killed = "gunicorn-sync" if "gunicorn" in " ".join(loaded[0].cmdline()) else "uvicorn"
    loaded[0].send_signal(signal.SIGKILL)
    seen.update(watch_children(proc.pid, until=lambda _: False, timeout=0.5))
    out, err = finish(proc, seen)
    assert census("a server's master SIGKILLed mid-trial", mark, during) == 0
    # A server that dies is a finding of a completed run: exit 0, and the answer says so.
    assert proc.returncode == 0, err
    ruled_out = out.split("Not recommended:", 1)[1]
    assert f"  {killed}: health-sync failed" in ruled_out, out
    document = results(tmp_path)
    assert document is not None and document["status"] == "complete"
    by_server = {e["server"]: e for e in document["results"]}
    assert by_server[killed]["status"] == "failed"
    assert "died during the load of health-sync" in by_server[killed]["reason"]["params"]["message"]
    other = by_server[({"gunicorn-sync", "uvicorn"} - {killed}).pop()]
    assert other["status"] == "ok" and len(other["trials"]) == 2


@pytest.fixture
def own_postgres_database() -> Iterator[str]:
    """A PostgreSQL database of this test's own (migrated, seeded), dropped at the end."""
    import psycopg

    services.require_postgres()
    name = f"djbench_fault_{secrets.token_hex(4)}"
    admin = services.POSTGRES_URL
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = admin.rsplit("/", 1)[0] + f"/{name}"
    try:
        prepare(url)
        yield url
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_database_going_away_makes_trials_invalid_and_the_run_goes_on(
    own_postgres_database: str, tmp_path: Path
) -> None:
    import psycopg

    proc = runbench(
        "--servers", "gunicorn-sync", "--scenarios", "movies-sync", "--trials", "3",
        "--output", str(tmp_path), env={"DATABASE_URL": own_postgres_database},
    )  # fmt: skip
    seen = watch_children(proc.pid, until=lambda _: trials_saved(tmp_path) >= 1, timeout=120)
    assert trials_saved(tmp_path) >= 1
    name = own_postgres_database.rsplit("/", 1)[1]
    with psycopg.connect(services.POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    seen.update(watch_children(proc.pid, until=lambda _: False, timeout=0.5))
    finish(proc, seen)
    assert proc.returncode == 3  # its one pair invalid: nothing was measured
    document = results(tmp_path)
    assert document is not None and document["status"] == "complete"
    [entry] = document["results"]
    assert entry["status"] == "invalid"
    assert len(entry["trials"]) == 3
    assert entry["trials"][0]["valid"]
    last = entry["trials"][-1]
    assert not last["valid"] and last["invalid"]["code"] == "too_many_errors"
    assert last["status"].get("500", 0) > 0 or last["error_count"] > 0
