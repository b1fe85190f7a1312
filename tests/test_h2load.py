"""h2load as a driver (issue 27 item 3): its output parsed from recorded runs (HTTP/1.1
and h2c), and live: HTTP/2 judged by the protocol h2load negotiated, a server that does
not speak it `incompatible` with the reason."""

from __future__ import annotations

import dataclasses
import os
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from djbench.measure.drivers.base import DriverError, LoadSpec
from djbench.measure.drivers.h2load import H2loadDriver, parse_output
from djbench.results import store

FIXTURES = Path(__file__).parent / "fixtures" / "h2load"


def test_an_h2c_run_is_parsed_with_latencies_from_its_request_log() -> None:
    text = (FIXTURES / "h2c-hypercorn.txt").read_text()
    result = parse_output(text, expect_status=200)
    requests = sum(1 for line in text.splitlines() if line[:1].isdigit() and "\t200\t" in line)
    assert result.requests == requests > 0
    assert result.figures.protocol == "h2c" and result.status == {"200": requests}
    assert 0 < result.latency_ms["p50"] <= result.latency_ms["p99"] <= result.latency_ms["max"]
    assert result.error_count == 0 and result.unexpected == 0 and result.duration_s > 0


def test_an_http1_run_and_failed_streams() -> None:
    text = (FIXTURES / "h1-uvicorn.txt").read_text()
    result = parse_output(text)
    assert result.figures.protocol == "http/1.1" and result.requests > 0
    # A failed stream (status -1) is an error, never a latency.
    broken = text + "1700000000000000\t-1\t5000\n"
    assert parse_output(broken).errors["read"] == result.errors["read"] + 1
    assert parse_output(broken).requests == result.requests


def test_the_command_line() -> None:
    driver = H2loadDriver()
    spec = LoadSpec(
        host="127.0.0.1", port=8000, method="GET", path="/api/sync/health", body=None,
        content_type=None, connections=32, duration=2.0, headers=(("Cookie", "a=b"),),
        protocol="h2c",
    )  # fmt: skip
    argv = driver.argv(spec)
    assert argv[-1] == "http://127.0.0.1:8000/api/sync/health" and "--h1" not in argv
    assert argv[argv.index("--duration") + 1] == "2000ms"
    assert argv[argv.index("--max-concurrent-streams") + 1] == "1"
    assert "Cookie: a=b" in argv

    assert "--h1" in driver.argv(dataclasses.replace(spec, protocol="h1"))
    over_tls = driver.argv(dataclasses.replace(spec, protocol="h2", scheme="https"))
    assert over_tls[-1] == "https://127.0.0.1:8000/api/sync/health" and "--h1" not in over_tls


def test_protocol_options_are_checked() -> None:
    with pytest.raises(CommandError, match="--protocol h2/h2c needs --driver h2load or auto"):
        call_command("runbench", "--protocol", "h1,h2", "--driver", "wrk", stdout=StringIO())
    with pytest.raises(CommandError, match="--protocol takes h1, h2, h2c, got 'h3'"):
        call_command("runbench", "--protocol", "h3", "--driver", "h2load", stdout=StringIO())


def _need_h2load() -> None:
    if shutil.which("h2load") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("h2load is not installed (CI=true: .ci/run installs nghttp2-client)")
        pytest.skip("h2load is not installed (apt-get install nghttp2-client)")


@pytest.mark.servers
def test_http2_is_judged_by_what_was_negotiated(
    live_database: str, tmp_path: Path, one_pass: None
) -> None:
    """Hypercorn speaks h2c; gunicorn's sync worker does not, and is `incompatible`
    with the protocol h2load got, never measured as if it were HTTP/2."""
    _need_h2load()
    call_command(
        "runbench", "--driver", "h2load", "--protocol", "h2c",
        "--servers", "hypercorn,gunicorn-sync", "--scenarios", "health-sync",
        "--trials", "1", "--duration", "1", "--warmup", "0.5", "--ws-idle", "0",
        "--no-setup", "--output", str(tmp_path), stdout=StringIO(),
    )  # fmt: skip
    [path] = tmp_path.glob("*.json")
    by_server = {e.server: e for e in store.load(path).results}
    hypercorn = by_server["hypercorn"]
    assert hypercorn.status == "ok", hypercorn.reason
    assert hypercorn.trials[0].driver_figures.protocol == "h2c" and hypercorn.trials[0].requests > 0
    sync = by_server["gunicorn-sync"]
    assert sync.status == "incompatible" and sync.reason is not None
    assert sync.reason.code == "protocol_refused"


def test_requests_cut_at_the_end_are_neither_answers_nor_errors() -> None:
    """h2load logs status 0 for a request still in flight when its duration ended (and
    counts it as succeeded): seen in CI, 2 of 199, which read as 1% wrong statuses."""
    text = (FIXTURES / "h2c-hypercorn.txt").read_text()
    whole = parse_output(text, expect_status=200)
    cut = parse_output(text + "1700000000000000\t0\t90000\n", expect_status=200)
    assert cut.requests == whole.requests and cut.unexpected == 0 and cut.error_count == 0
    assert cut.figures.cut_at_end == 1


def test_hypercorns_http1_status_line_is_a_sentence_not_an_empty_window() -> None:
    """Recorded: h2load --h1 against Hypercorn 0.18 reads every response as status 0
    (its status line has no reason phrase); that is the driver failing to read, said
    so, never 'no request completed'."""
    text = (FIXTURES / "h1-hypercorn-status0.txt").read_text()
    with pytest.raises(DriverError, match=r"h2load read no HTTP/1\.1 status from this server"):
        parse_output(text, expect_status=200)


def test_h2load_http1_is_refused_before_a_server_that_closes_every_connection() -> None:
    from djbench.launch.live import Deployment
    from djbench.measure.drivers import DRIVERS
    from djbench.reports.words import say
    from djbench.run.variants import driver_refused
    from djbench.servers import SERVERS

    sync = Deployment(server=SERVERS["gunicorn-sync"])
    refused = driver_refused(sync, DRIVERS["h2load"])
    assert refused is not None and "never ends against gunicorn-sync" in say(refused)
    assert driver_refused(sync, DRIVERS["builtin"]) is None
    assert driver_refused(dataclasses.replace(sync, proxy="caddy"), DRIVERS["h2load"]) is None
    assert driver_refused(Deployment(server=SERVERS["uvicorn"]), DRIVERS["h2load"]) is None
