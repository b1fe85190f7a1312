"""What a server holds besides memory (issue 24): threads and descriptors counted on a
live tree, exceptions counted where the server raised them, database connections read
from pg_stat_activity by the application_name runbench gives the server, and the leak
verdicts. The live PostgreSQL test runs its leaking server under a role with a
CONNECTION LIMIT, so that it cannot use up the shared server's 100 connections."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from djbench import exceptions
from djbench.launch.process import ProcessTree, running
from djbench.measure.resource_watch import ExceptionLines
from djbench.measure.sampler import TreeSampler
from djbench.reports.held_words import exceptions_text
from djbench.reports.words import say
from djbench.results import store
from djbench.results.model import (
    DbConnections,
    ExceptionCount,
    PairResult,
    Resources,
    Trial,
)
from djbench.verdicts.held import held

THREADS_AND_FILES = """
import os, threading, time
files = [open(os.devnull) for _ in range(20)]
stop = threading.Event()
for _ in range(6):
    threading.Thread(target=stop.wait, daemon=True).start()
time.sleep(0.8)
more = [open(os.devnull) for _ in range(30)]
for _ in range(4):
    threading.Thread(target=stop.wait, daemon=True).start()
time.sleep(60)
"""


def test_threads_and_descriptors_are_counted_on_a_live_tree(tmp_path: Path, one_pass: None) -> None:
    tree = ProcessTree(
        name="holder",
        argv=[sys.executable, "-c", THREADS_AND_FILES],
        env={},
        cwd=tmp_path,
        log_path=tmp_path / "holder.log",
    )
    with running(tree):
        time.sleep(0.4)
        sampler = TreeSampler(tree, 0.1).start()
        time.sleep(1.0)
        samples = sampler.stop()
    first, last = samples[0], samples[-1]
    assert first.threads == 7 and last.threads == 11  # main + 6, then + 4
    assert last.fds - first.fds == 30 and first.fds >= 23  # stdio + 20 files


def test_exception_lines_are_counted_between_the_window_edges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(exceptions.DIRECTORY_VARIABLE, str(tmp_path))
    before = (tmp_path / "111.jsonl").open("w")
    before.write(json.dumps({"type": "KeyError", "message": "old"}) + "\n")
    before.close()
    lines = ExceptionLines(tmp_path).start()
    for _ in range(3):
        try:
            raise psycopg.OperationalError(
                'connection failed: connection to server at "127.0.0.1", port 5432 failed: '
                "FATAL:  sorry, too many clients already\nsecond line"
            )
        except psycopg.OperationalError:
            exceptions.record(sender=None)
    counted = lines.read()
    [((kind, message), count)] = counted.items()
    assert kind == "psycopg.OperationalError" and count == 3
    assert message.endswith("too many clients already")  # the first line only
    entry = _entry([_trial(exceptions=[ExceptionCount(type=kind, message=message, count=3)])])
    figures = held(entry)
    assert figures is not None
    assert exceptions_text(figures) == "3 x OperationalError: sorry, too many clients already"
    assert [v.code for v in figures.verdicts] == ["db_exhausted"]


def _trial(
    db: DbConnections | None = None,
    threads: tuple[int, int, int] = (5, 5, 5),
    exceptions: list[ExceptionCount] | None = None,
) -> Trial:
    found = exceptions or []
    return Trial(
        round=0, valid=True, requests=100, duration_s=1.0, rps=100.0,
        resources=Resources(
            threads=threads, fds=(10, 10, 10), db=db, exceptions=found,
            exceptions_total=sum(e.count for e in found),
        ),
    )  # fmt: skip


def _entry(trials: list[Trial], workers: int = 2, threads: int | None = 4) -> PairResult:
    return PairResult(
        server="gunicorn-gthread", proxy="none", scenario="movies-sync", interface="wsgi",
        kind="http", status="ok", workers=workers, threads=threads, trials=trials,
    )  # fmt: skip


def test_leak_verdicts_against_what_the_layout_explains() -> None:
    def db(peak: int, after: int, pool: int | None = None) -> DbConnections:
        return DbConnections(
            application_name="x", peak=peak, after=after, max_connections=100, pool_max=pool
        )

    # 2 workers x 4 threads: 8 connections explained, and held: nothing to say.
    fine = held(_entry([_trial(db(8, 8))]))
    assert fine is not None and fine.explained == 8 and fine.verdicts == []
    # A pool of 10 per process explains 20.
    pooled = held(_entry([_trial(db(20, 20, pool=10))]))
    assert pooled is not None and pooled.explained == 20 and pooled.verdicts == []
    # One per request in flight, closed after: over the layout, not kept.
    busy = held(_entry([_trial(db(32, 0))], workers=1, threads=None))
    assert busy is not None and [v.code for v in busy.verdicts] == ["db_over_layout"]
    assert "at 8 workers with as many requests in flight each, about 256" in say(busy.verdicts[0])
    # Kept after the load: the leak, with its cost at 8 workers.
    leak = held(_entry([_trial(db(40, 40))], workers=1, threads=None))
    assert leak is not None and [v.code for v in leak.verdicts] == ["db_kept_after"]
    assert "about 320 (this database allows 100)" in say(leak.verdicts[0])
    # Threads that rise within every window, three windows running.
    rising = held(_entry([_trial(threads=(10, 14, 14)) for _ in range(3)]))
    assert rising is not None and [v.code for v in rising.verdicts] == ["threads_grow"]
    steady = held(_entry([_trial(threads=(10, 14, 14)), _trial(threads=(14, 14, 14))] * 2))
    assert steady is not None and steady.verdicts == []


LIMIT = 12  # the role's CONNECTION LIMIT: what a leaking server may take of the 100
ROLE = "djbench_limited"


@pytest.fixture
def limited_role(live_database: str) -> Iterator[str]:
    """The live database, reached through a role that may hold LIMIT connections."""
    if connection.vendor != "postgresql":
        pytest.skip("database connections are counted on PostgreSQL: the PostgreSQL pass")
    admin = live_database
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP ROLE IF EXISTS {ROLE}")
        conn.execute(f"CREATE ROLE {ROLE} LOGIN CONNECTION LIMIT {LIMIT}")
        conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {ROLE}")
        conn.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {ROLE}")
        conn.execute(f"GRANT USAGE, CREATE ON SCHEMA public TO {ROLE}")
    try:
        yield admin.replace("postgres@", f"{ROLE}@", 1)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (ROLE,),
            )
            conn.execute(f"REASSIGN OWNED BY {ROLE} TO postgres")
            conn.execute(f"DROP OWNED BY {ROLE}")
            conn.execute(f"DROP ROLE IF EXISTS {ROLE}")


@pytest.mark.servers
def test_connections_per_thread_and_an_asgi_leak_on_postgresql(
    limited_role: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Persistent connections (CONN_MAX_AGE=60): Uvicorn keeps one per request thread,
    which the verify gate says before anything is timed (with the project's remedy), and
    until the role's limit refuses more, the pair comes with its cause and the leak
    verdict; gunicorn-gthread with 4 threads, started after it, holds at most 4, as its
    layout explains, and is not failed by Uvicorn's leak: its sessions were ended."""
    monkeypatch.setenv("DATABASE_URL", limited_role)
    out = StringIO()
    # The leak is a finding of a completed run (exit 0): the pair invalid, with its cause.
    call_command(
        "runbench", "--servers", "uvicorn,gunicorn-gthread", "--threads", "4",
        "--scenarios", "movies-sync", "--axis", "DB_CONN_MAX_AGE=60", "--trials", "2",
        "--duration", "1", "--warmup", "0.5", "--ws-idle", "0", "--no-setup",
        "--output", str(tmp_path), stdout=out,
    )  # fmt: skip
    [path] = tmp_path.glob("*.json")
    document = store.load(path)
    by_server = {e.server: e for e in document.results}
    threaded = held(by_server["gunicorn-gthread"])
    assert threaded is not None and threaded.db_peak is not None
    assert 1 <= threaded.db_peak <= 4 and threaded.explained == 4, threaded
    assert threaded.verdicts == [] and threaded.exceptions_total == 0
    asgi = held(by_server["uvicorn"])
    assert asgi is not None and asgi.db_peak is not None
    assert asgi.db_peak >= LIMIT - 1 and (asgi.db_after or 0) > 1, asgi
    codes = {v.code for v in asgi.verdicts}
    assert "db_kept_after" in codes and "db_exhausted" in codes, codes
    assert "too many connections for role" in exceptions_text(asgi)
    assert by_server["uvicorn"].status == "invalid"
    assert by_server["gunicorn-gthread"].status == "ok"
    # Both kept connections open after their round-1 load: round 2 ran them back to back,
    # not side by side, where Uvicorn's would have starved gunicorn-gthread's windows.
    assert [r.beside for r in document.deployment_rounds] == [[]] * 4
    leaks = {
        e.server
        for e in document.results
        if e.verify
        for n in e.verify.warnings
        if n.code == "db_leak"
    }
    assert leaks == {"uvicorn"}
    printed = " ".join(out.getvalue().split())
    gate = printed.index("about one per request")
    # The sample reads DB_CONN_MAX_AGE for the server alone (an axis): the remedy names
    # the setting's line in the project's settings, never the sample's variable.
    assert "remedy: set CONN_MAX_AGE (as the server's environment sets it) to 0" in printed
    assert "sampleproject/settings.py:" in printed
    first = printed.index("uvicorn[DB_CONN_MAX_AGE=60] movies-sync c=32 round 1")
    assert gate < first, "the gate's finding comes before the server's first window"
    assert f"this role may open {LIMIT}" in printed
    assert "raised:" in printed and "What each server held" in printed
    guide = tmp_path / "guide.md"
    call_command("benchguide", str(path), "--output", str(guide), stdout=StringIO())
    assert "What it costs the rest of your system" in guide.read_text()


def test_threads_that_grow_over_a_soak_are_flagged() -> None:
    """Over a soak (one long window), the trend of the tree's threads and descriptors:
    a thread a minute for ten minutes grows; steady counts with noise do not."""
    import random

    from djbench.results.model import MemoryPoint, Timeline

    rng = random.Random(7)

    def soak(threads_per_s: float) -> Trial:
        points = [
            MemoryPoint(
                t=t, pss=60.0, uss_worker_max=30.0, processes=2,
                threads=20 + int(threads_per_s * t) + rng.choice((0, 1)),
                fds=40 + rng.choice((0, 1, 2)),
            )
            for t in range(0, 600, 5)
        ]  # fmt: skip
        trial = _trial(threads=(20, 30, 30))
        trial.timeline = Timeline(interval_s=5.0, poll_s=0.25, memory=points)
        return trial

    leaking = held(_entry([soak(1 / 60)]))
    assert leaking is not None
    [grow] = [v for v in leaking.verdicts if v.code == "threads_grow_soak"]
    assert 40 < grow.params["per_hour"] < 80 and "an hour over the soak" in say(grow)
    steady = held(_entry([soak(0.0)]))
    assert steady is not None and not [v for v in steady.verdicts if "soak" in v.code]
