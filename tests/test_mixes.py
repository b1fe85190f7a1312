"""Weighted mixes of pages (issue 38 item 2): the file's syntax, the seeded draws, the
builtin driver's figures per page, and a live mix of a fast and a slow page."""

from __future__ import annotations

import argparse
import math
import os
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from scipy import stats

from djbench.measure.drivers import DRIVERS
from djbench.measure.drivers.base import LoadSpec, Page
from djbench.measure.drivers.loadpages import Requests
from djbench.plan import scenarios
from djbench.plan.options import OptionError
from djbench.results import store as results
from djbench.run.selection import check_mixes
from djbench.verdicts import runs as analysis
from djbench.verdicts.mixes import mix_pairs
from tests.slowserver import SlowServer, builtin_load

FIXTURE = Path(__file__).parent / "fixtures" / "mixes.toml"
PLAIN = "[[scenario]]\nname='a'\npath='/a'\n[[scenario]]\nname='b'\npath='/b'\n"


def _load(tmp_path: Path, text: str) -> scenarios.ScenarioFile:
    path = tmp_path / "s.toml"
    path.write_text("version = 1\n" + text)
    return scenarios.load(path)


def test_a_mix_is_its_pages_by_weight_and_leaves_plain_scenarios_as_they_were(
    tmp_path: Path,
) -> None:
    alone = _load(tmp_path, PLAIN)
    mixed = _load(tmp_path, PLAIN + "[[scenario]]\nname='m'\nmix={a=3, b=1}\n")
    [mix] = [s for s in mixed.scenarios if s.mix]
    assert [(p.name, p.weight, p.share(mix.mix)) for p in mix.mix] == [
        ("a", 3.0, 0.75),
        ("b", 1.0, 0.25),
    ]
    assert mix.request.path == "/a" and mix.description == "a 75%, b 25%"
    assert [s.fingerprint() for s in alone.scenarios] == [
        s.fingerprint() for s in mixed.scenarios if not s.mix
    ]
    heavier = _load(tmp_path, PLAIN + "[[scenario]]\nname='m'\nmix={a=1, b=1}\n")
    assert heavier.scenarios[2].fingerprint() != mix.fingerprint()  # weights are definition


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[[scenario]]\nname='m'\nmix={a=1, c=1}\n", "mix names c, which is not a plain HTTP"),
        ("[[scenario]]\nname='m'\nmix={a=1}\npath='/x'\n", "path belong(s) on them"),
        ("[[scenario]]\nname='m'\nmix={a=0}\n", "mix.a: must be greater than 0"),
        ("[[scenario]]\nname='m'\nmix={}\n", "mix: "),
        ("[[scenario]]\nname='m'\nmix={a=1}\n[[scenario]]\nname='n'\nmix={m=1}\n", "mix names m"),
        ("[[scenario]]\nname='m'\n", "path: required key is missing (or a mix"),
        (
            "[[scenario]]\nname='w'\npath='/ws'\nkind='websocket'\n"
            "[[scenario]]\nname='m'\nmix={a=1, w=1}\n",
            "not websockets",
        ),
        (
            "[[scenario]]\nname='x'\npath='/x'\ninterfaces=['asgi']\n"
            "[[scenario]]\nname='y'\npath='/y'\ninterfaces=['wsgi']\n"
            "[[scenario]]\nname='m'\nmix={x=1, y=1}\n",
            "share no interface",
        ),
    ],
)
def test_a_mistaken_mix_is_one_line(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(scenarios.ScenarioError) as caught:
        _load(tmp_path, PLAIN + text)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def _args(seed: int) -> argparse.Namespace:
    pages = [
        Page("home", 40, "GET", ("/",)),
        Page("post", 30, "GET", ("/p/1", "/p/2")),
        Page("search", 20, "GET", ("/s?q=a",)),
        Page("api", 10, "POST", ("/api",), body="{}", content_type="application/json"),
    ]
    return argparse.Namespace(
        host="127.0.0.1", port=8000, method="GET", path=["/"], header=[], body="",
        content_type="", page=[p.as_json() for p in pages], seed=seed,
    )  # fmt: skip


def test_seeded_draws_follow_the_weights_and_repeat() -> None:
    """20,000 draws: the counts fit the weights (chi-square, p > 0.001 at this fixed
    seed), the same seed draws the same sequence, a page's paths are taken in turn."""
    draws = Requests(_args(7))
    picked = [draws.next() for _ in range(20_000)]
    counts = [sum(1 for page, _ in picked if page == i) for i in range(4)]
    assert stats.chisquare(counts, [8000, 6000, 4000, 2000]).pvalue > 0.001
    again = Requests(_args(7))
    assert [again.next() for _ in range(200)] == picked[:200]
    assert [again.next() for _ in range(200)] != [Requests(_args(8)).next() for _ in range(200)]
    posts = [raw.split(b" ")[1] for page, raw in picked if page == 1][:4]
    assert posts == [b"/p/1", b"/p/2", b"/p/1", b"/p/2"]
    [api] = {raw for page, raw in picked if page == 3}
    assert api.startswith(b"POST /api HTTP/1.1") and api.endswith(b"\r\n\r\n{}")


@pytest.mark.parametrize("rate", [None, 400.0])
def test_the_builtin_driver_counts_every_page_of_a_mix(rate: float | None) -> None:
    """Closed and open loop: the pages' answers sum to the window's, each page's share
    is within 4 standard errors of its weight, the seed is in the result."""
    pages = (Page("a", 3, "GET", ("/a",), expect_status=200), Page("b", 1, "GET", ("/b",)))
    with SlowServer(delay=0.005) as server:
        got = builtin_load(server.port, 8, 2.0, pages=pages, seed=11, rate=rate, warmup=0.3)
    assert got.figures.seed == 11
    assert sum(p["requests"] for p in got.pages) == got.requests > 300
    assert sum(p["errors"] for p in got.pages) == got.error_count - got.errors.get("unsent", 0)
    share = got.pages[0]["requests"] / got.requests
    assert abs(share - 0.75) < 4 * math.sqrt(0.75 * 0.25 / got.requests), share
    assert all(p["latency_ms"]["p99"] >= 5 for p in got.pages)


def test_locust_draws_a_mix_in_every_worker_and_merges_its_pages() -> None:
    """Two Locust worker processes: each page's answers, merged by the master, sum to
    the window's; the shares follow the weights; the seed is recorded."""
    from tests.test_locust_and_target import _need_locust

    _need_locust()
    pages = (Page("a", 3, "GET", ("/a",), expect_status=200), Page("b", 1, "GET", ("/b", "/c")))
    driver = DRIVERS["locust"]
    with SlowServer(delay=0.005) as server:
        spec = LoadSpec(
            host="127.0.0.1", port=server.port, method="GET", path="/a", body=None,
            content_type=None, connections=8, duration=2.0, warmup=0.5, pages=pages, seed=3,
            workers=2,
        )  # fmt: skip
        out = subprocess.run(
            driver.argv(spec), env={**os.environ, **driver.env(spec)},
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    got = driver.parse(out.stdout)
    assert got.figures.seed == 3 and got.requests > 300
    assert sum(p["requests"] for p in got.pages) == got.requests
    share = got.pages[0]["requests"] / got.requests
    assert abs(share - 0.75) < 4 * math.sqrt(0.75 * 0.25 / got.requests), share
    assert all(p["latency_ms"]["p99"] >= 5 for p in got.pages)


def test_a_kept_connection_closed_without_notice_is_resent_not_failed() -> None:
    """A server that closes each connection after its answer without `Connection: close`
    (uWSGI's http-socket, bakerydemo's own etc/uwsgi.ini): the request sent on it is
    resent on a new connection, as browsers do, counted and said; not an error."""
    with SlowServer(delay=0.002, silent_close=0.01) as server:
        got = builtin_load(server.port, 4, 1.5, warmup=0.2)
    assert got.requests > 50 and got.error_count == 0, got.errors
    assert (got.figures.resent or 0) > got.requests / 2, got.figures


def test_a_driver_that_sends_one_request_refuses_a_mix(tmp_path: Path) -> None:
    chosen = list(scenarios.load(FIXTURE).scenarios)
    with pytest.raises(OptionError, match="mix-sync, mix-async is a mix of pages, which"):
        check_mixes(DRIVERS["wrk"], chosen)
    check_mixes(DRIVERS["builtin"], chosen)  # no refusal
    check_mixes(DRIVERS["wrk"], [s for s in chosen if not s.mix])


@pytest.mark.servers
def test_a_slow_page_holds_a_sync_worker_and_the_fast_page_waits(
    live_database: str, tmp_path: Path
) -> None:
    """80% health, 20% a 50 ms page, 8 connections: under gunicorn-sync (one worker, one
    thread) the health page's p99 in the mix is many times its own alone, said as waiting;
    under uvicorn with the async pages it is not. The mix's pages verify one by one."""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("independent of the database: run in the SQLite pass only")
    out = StringIO()
    call_command(
        "runbench", "--no-setup", "--scenario-file", str(FIXTURE),
        "--servers", "gunicorn-sync,uvicorn",
        "--scenarios", "health-sync,health-async,mix-sync,mix-async",
        "--trials", "1", "--duration", "2", "--warmup", "0.5", "--concurrency", "8",
        "--output", str(tmp_path), stdout=out, stderr=StringIO(),
    )  # fmt: skip
    [path] = tmp_path.glob("*.json")
    document = results.load(path)
    pairs = {(m.entry.server, m.entry.scenario): m for m in mix_pairs(document)}
    assert set(pairs) == {
        (s, m) for s in ("gunicorn-sync", "uvicorn") for m in ("mix-sync", "mix-async")
    }
    for m in pairs.values():
        [trial] = m.entry.trials
        assert trial.pages is not None
        assert sum(p.requests for p in trial.pages) == trial.requests
        assert abs(m.rows[0].share - 0.8) < 4 * math.sqrt(0.16 / trial.requests) + 0.01
    sync_health = pairs["gunicorn-sync", "mix-sync"].rows[0]
    async_health = pairs["uvicorn", "mix-async"].rows[0]
    assert sync_health.page == "health-sync" and sync_health.blocked, sync_health
    assert async_health.p99_ms is not None and sync_health.p99_ms is not None
    assert sync_health.p99_ms > 3 * async_health.p99_ms, (sync_health, async_health)
    assert pairs["gunicorn-sync", "mix-sync"].limiting is not None
    text = out.getvalue()
    assert "Mixes per page" in text and "health-sync waits behind the slower pages" in text
    run = analysis.load_run(path)
    from djbench.reports import guide, report

    assert "## Mixes: figures per page" in report.markdown([run])
    assert "## Mixes: which page limits the p99" in guide.markdown(run)


def test_capacity_holds_a_mix_s_pages_to_their_own_p99_where_the_file_says_so() -> None:
    """The mix's p99 within the target but one page's above its scenario's own p99
    threshold: the window fails for that page; without the page's target it passes."""
    from djbench.results.model import Latency, PageFigures, Trial
    from djbench.verdicts.capacity_search import step_of

    pages = [
        PageFigures(name="home", weight=3, requests=900, rps=300, latency_ms=Latency(p99=20)),
        PageFigures(name="search", weight=1, requests=100, rps=100, latency_ms=Latency(p99=90)),
    ]
    trial = Trial(
        round=0, valid=True, requests=1000, duration_s=2.5, rps=400.0,
        latency_ms=Latency(p50=5, p99=60), pages=pages,
    )  # fmt: skip
    assert step_of("search", 400, 8, trial, 100.0, 0.01).passed
    held = step_of("search", 400, 8, trial, 100.0, 0.01, {"search": 50.0})
    assert not held.passed and held.why == "page_p99_above_slo"
    assert step_of("search", 400, 8, trial, 100.0, 0.01, {"home": 50.0}).passed
