"""Settings as measured axes (--axis), and PostgreSQL / Redis one option away."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from djbench.plan.options import OptionError
from djbench.plan.runplan import RunOptions, parse_axes, variant_label
from djbench.reports import guide
from djbench.reports.words import say
from djbench.results import store
from djbench.run import services
from djbench.verdicts.runs import load_run
from tests import services as test_services
from tests.live import ROOT
from tests.resultfiles import entry, write


def test_axes_parse_into_every_combination() -> None:
    axes = parse_axes("DB_POOL=0,1; MIDDLEWARE_PROFILE=default,lean")
    assert axes == {"DB_POOL": ["0", "1"], "MIDDLEWARE_PROFILE": ["default", "lean"]}

    variants = RunOptions(axes=axes).variants()
    assert [variant_label(v) for v in variants] == [
        "DB_POOL=0,MIDDLEWARE_PROFILE=default",
        "DB_POOL=0,MIDDLEWARE_PROFILE=lean",
        "DB_POOL=1,MIDDLEWARE_PROFILE=default",
        "DB_POOL=1,MIDDLEWARE_PROFILE=lean",
    ]
    assert RunOptions().variants() == [()]
    assert parse_axes(None) == {}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("db_pool=0,1", "NAME an environment variable in capitals, got 'db_pool=0,1'"),
        ("DB_POOL", "--axis takes NAME=V1,V2"),
        ("DB_POOL=0;DB_POOL=1", "--axis names DB_POOL twice"),
        ("DB_POOL=", "--axis DB_POOL: give at least one value"),
        ("A=1,2,3,4,5;B=1,2,3,4", "--axis makes 20 combinations; at most 16 per run"),
    ],
)
def test_bad_axes_are_one_line(raw: str, message: str) -> None:
    with pytest.raises(OptionError) as caught:
        parse_axes(raw)
    assert message in str(caught.value)


def test_bad_axis_from_the_command_is_exit_2() -> None:
    with pytest.raises(CommandError) as caught:
        call_command("runbench", "--axis", "x=1", stdout=StringIO(), stderr=StringIO())
    assert caught.value.returncode == 2


def test_guide_names_the_winner_per_interface(tmp_path: Path) -> None:
    pool = {"DB_POOL": "1"}
    no_pool = {"DB_POOL": "0"}
    entries = [
        entry("gunicorn-sync", "movies-sync", [90, 92, 91], variant=no_pool, interface="wsgi"),
        entry("gunicorn-sync", "movies-sync", [95, 96, 94], variant=pool, interface="wsgi"),
        entry("uvicorn", "movies-sync", [80, 82, 81], variant=no_pool, interface="asgi"),
        entry("uvicorn", "movies-sync", [160, 165, 162], variant=pool, interface="asgi"),
        entry("uvicorn", "sleep-async", [100, 101, 99], variant=no_pool, interface="asgi"),
        entry("uvicorn", "sleep-async", [180, 181, 179], variant=pool, interface="asgi"),
    ]
    run = load_run(write(tmp_path, "ax", entries, axes={"DB_POOL": ["0", "1"]}))
    recs = {r.workload: r for r in guide.recommendations(run)}
    db = recs["db"].text
    assert "**ASGI**: use `DB_POOL=1`. `DB_POOL=1` gave 1.90x the req/s of `DB_POOL=0`" in db
    assert "(median of 2 pair(s), 1.80-2.00x; 2 better)" in db
    # 4% better in every round of three: real, perhaps, but neither beyond the 5%
    # threshold nor shown to be within it. Medians alone used to say "use" here.
    assert "**WSGI**: no verdict in this run (no difference beyond 5% could be shown" in db
    assert "`DB_POOL=1` gave 1.04x" in db and "1 inconclusive" in db
    assert recs["middleware"].text.startswith("Not measured in this run. `--axis")
    # Each variant is a pair of its own everywhere, with the variant in its label.
    assert {p.label for p in run.pairs} >= {"uvicorn[DB_POOL=1]", "gunicorn-sync[DB_POOL=0]"}


def test_no_axis_says_how_to_measure_it(tmp_path: Path) -> None:
    run = load_run(write(tmp_path, "plain", [entry("uwsgi", "movies-sync", [1, 2, 3])]))
    recs = {r.workload: r for r in guide.recommendations(run)}
    # The sample's variables are never suggested to a project whose settings do not
    # read them (issue 57); what the settings read is (the run recorded it).
    assert "DB_POOL" not in recs["db"].text and "--axis" in recs["db"].text
    assert "MIDDLEWARE_PROFILE" not in recs["middleware"].text


@pytest.mark.servers
def test_a_two_value_axis_on_one_server(live_database: str, tmp_path: Path) -> None:
    out = StringIO()
    args = [
        "--servers",
        "uvicorn",
        "--scenarios",
        "health-sync",
        "--axis",
        "MIDDLEWARE_PROFILE=default,lean;DB_POOL=0,1",
        "--trials",
        "1",
        "--duration",
        "1",
        "--warmup",
        "0.2",
        "--output",
        str(tmp_path),
        "--no-setup",
    ]
    call_command("runbench", *args, stdout=out, stderr=StringIO())
    [path] = tmp_path.glob("*.json")
    document = store.load(path)
    assert document.plan.axes == {
        "MIDDLEWARE_PROFILE": ["default", "lean"],
        "DB_POOL": ["0", "1"],
    }
    by_variant = {e.variant_label: e for e in document.results}
    assert len(by_variant) == 4
    for profile in ("default", "lean"):
        ok = by_variant[f"MIDDLEWARE_PROFILE={profile},DB_POOL=0"]
        assert ok.status == "ok" and ok.trials[0].rps > 0
        assert ok.command["server"].env["MIDDLEWARE_PROFILE"] == profile
        pooled = by_variant[f"MIDDLEWARE_PROFILE={profile},DB_POOL=1"]
        if connection.vendor == "sqlite":  # the sample's settings refuse a pool on SQLite
            assert pooled.status == "incompatible"
            assert "DB_POOL=1 needs a PostgreSQL DATABASE_URL" in say(pooled.reason)
        else:
            assert pooled.status == "ok"
    assert "uvicorn[MIDDLEWARE_PROFILE=lean,DB_POOL=0]" in out.getvalue()  # the results table


def test_database_and_redis_unreachable_are_sentences() -> None:
    with pytest.raises(OptionError) as caught:
        services.ensure_database("postgres://postgres@127.0.0.1:1/djbench")
    assert str(caught.value).startswith("--database: PostgreSQL on 127.0.0.1:1 is unreachable (")
    assert "\n" not in str(caught.value)
    with pytest.raises(OptionError) as caught:
        services.check_redis("redis://127.0.0.1:1/0")
    assert str(caught.value).startswith("--redis: Redis on 127.0.0.1:1 is unreachable (")
    with pytest.raises(OptionError, match="valid: postgres"):
        services.database_url("mysql")


@pytest.mark.postgres
def test_database_is_created_when_missing() -> None:
    test_services.require_postgres()
    name = f"djbench_test_{uuid.uuid4().hex[:8]}"
    url = f"postgres://postgres@127.0.0.1:5432/{name}"
    import psycopg

    try:
        assert services.ensure_database(url) == (
            f"created PostgreSQL database {name!r} on 127.0.0.1:5432"
        )
        assert services.ensure_database(url) == (
            f"PostgreSQL database {name!r} on 127.0.0.1:5432 exists"
        )
    finally:
        with psycopg.connect(
            "postgres://postgres@127.0.0.1:5432/postgres", autocommit=True
        ) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.servers
def test_rediss_speaks_tls_and_an_unread_url_is_said() -> None:
    from django.test import override_settings

    test_services.require_redis()
    # A plain Redis asked for over TLS: the handshake fails, said in one sentence (a
    # plain-text PING to a TLS port used to be called "not Redis").
    with pytest.raises(OptionError, match=r"the TLS handshake with 127\.0\.0\.1:6379 failed"):
        services.check_redis("rediss://127.0.0.1:6379/0")
    local = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    with override_settings(CACHES=local, CHANNEL_LAYERS={}):
        said = services.unread("REDIS_URL", "redis://10.9.9.9:6380/0")
    assert said and "does not seem to read REDIS_URL" in said and "10.9.9.9:6380" in said
    redis = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                         "LOCATION": "redis://10.9.9.9:6380/0"}}  # fmt: skip
    with override_settings(CACHES=redis):
        assert services.unread("REDIS_URL", "redis://10.9.9.9:6380/0") is None


def test_runbench_on_postgres_and_redis_in_one_option(tmp_path: Path) -> None:
    test_services.require_postgres()
    test_services.require_redis()
    name = f"djbench_test_{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    import psycopg

    try:
        done = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "runbench",
                "--verify-only",
                "--database",
                f"postgres=postgres://postgres@127.0.0.1:5432/{name}",
                "--redis",
                test_services.REDIS_URL,
                "--servers",
                "gunicorn-sync",
                "--scenarios",
                "health-sync,deep-health-sync",
                "--output",
                str(tmp_path),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"created PostgreSQL database {name!r}" in done.stdout
        [path] = tmp_path.glob("*.json")
        document = store.load(path)
        assert document.environment.database.vendor == "postgresql"
        assert document.environment.database.server_version
        assert document.environment.redis  # the Redis server's version
        assert "RedisCache" in (document.environment.cache or "")
        assert {e.status for e in document.results} == {"ok"}
        assert json.loads(path.read_text())["environment"]["database"]["name"] == name
    finally:
        with psycopg.connect(
            "postgres://postgres@127.0.0.1:5432/postgres", autocommit=True
        ) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_combination_that_changes_no_setting_is_not_run_twice() -> None:
    from djbench.plan.project import current
    from djbench.run import variants

    project = current()
    found = variants.refused(project, [(("DJBENCH_UNUSED", "1"),), (("DJBENCH_UNUSED", "2"),)])
    assert found == {
        (("DJBENCH_UNUSED", "2"),): "DJBENCH_UNUSED=2 changes no setting here: the settings "
        "in effect are those of DJBENCH_UNUSED=1"
    }


@pytest.mark.postgres  # the PostgreSQL pass runs it (conftest keeps what is so marked)
def test_pooled_and_persistent_is_reported_as_the_pool_alone() -> None:
    """The sample turns CONN_MAX_AGE off when the pool is on (Django requires it): the
    pooled-and-persistent cell of DB_POOL=0,1;DB_CONN_MAX_AGE=0,60 changes nothing."""
    from django.db import connection

    from djbench.plan.project import current
    from djbench.run import variants

    if connection.vendor != "postgresql":
        pytest.skip("DB_POOL=1 needs PostgreSQL: run in the PostgreSQL pass")
    combos = parse_axes("DB_POOL=0,1;DB_CONN_MAX_AGE=0,60")
    cells = RunOptions(axes=combos).variants()
    found = variants.refused(current(), cells)
    assert list(found) == [(("DB_POOL", "1"), ("DB_CONN_MAX_AGE", "60"))]
    assert found[cells[-1]].startswith("DB_CONN_MAX_AGE=60 changes no setting here")
