"""Load drivers: output parsers on recorded outputs, and the builtin driver's count
checked against what a real server logged."""

from __future__ import annotations

import http.server
import itertools
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import pytest

from djbench.launch.process import ProcessTree, free_port, running
from djbench.measure.drivers import DRIVERS, DriverError, LoadSpec, pick
from djbench.measure.drivers.wrk import parse_output
from djbench.verdicts.engine import stats
from tests.live import ROOT

FIXTURES = Path(__file__).parent / "fixtures" / "wrk"


def test_wrk_ok() -> None:
    result = parse_output((FIXTURES / "ok.txt").read_text())
    assert result.requests == 477
    assert result.duration_s == pytest.approx(1.099573)
    assert result.rps == pytest.approx(477 / 1.099573)
    assert result.errors == {"connect": 0, "read": 0, "write": 0, "timeout": 0}
    assert result.non_2xx == 0
    assert result.latency_ms == {
        "p50": 16.828,
        "p90": 20.334,
        "p99": 102.591,
        "p999": 110.853,
        "max": 110.853,
        "mean": 20.758,
    }


def test_wrk_non_2xx_are_counted_apart_from_socket_errors() -> None:
    result = parse_output((FIXTURES / "non2xx.txt").read_text())
    assert result.requests == 407 and result.non_2xx == 407 and result.error_count == 0


def test_wrk_socket_errors() -> None:
    result = parse_output((FIXTURES / "socket_errors.txt").read_text())
    assert result.errors == {"connect": 0, "read": 16, "write": 158918, "timeout": 0}
    assert result.error_count == 158934


def test_wrk_without_result_line_is_an_error() -> None:
    with pytest.raises(DriverError, match="wrk printed no result line"):
        parse_output((FIXTURES / "refused.txt").read_text())


def test_wrk_argv_sets_the_request_through_the_script() -> None:
    spec = LoadSpec(
        host="127.0.0.1",
        port=8000,
        method="POST",
        path="/api/sync/reviews",
        body='{"a":1}',
        content_type="application/json",
        connections=16,
        duration=2.5,
        threads=1,
    )
    driver = DRIVERS["wrk"]
    argv = driver.argv(spec)
    assert argv[1:] == [
        "--threads",
        "1",
        "--connections",
        "16",
        "--duration",
        "3s",
        "--timeout",
        "10s",
        "--script",
        str(ROOT / "djbench" / "measure" / "drivers" / "wrk_report.lua"),
        "http://127.0.0.1:8000/api/sync/reviews",
    ]
    assert driver.env(spec) == {
        "DJBENCH_METHOD": "POST",
        "DJBENCH_BODY": '{"a":1}',
        "DJBENCH_CONTENT_TYPE": "application/json",
        "DJBENCH_HEADERS": "",
        "DJBENCH_PATHS": "",
        "DJBENCH_EXPECT_STATUS": "",
    }


def test_pick() -> None:
    assert pick("builtin").name == "builtin"
    assert pick("auto", needs_rate=True).name == "builtin"
    assert pick("auto").name == "builtin"
    if DRIVERS["wrk"].available():
        assert pick("wrk").name == "wrk"
        with pytest.raises(DriverError, match="--rate needs an open-loop driver"):
            pick("wrk", needs_rate=True)


def test_builtin_refuses_non_loopback_free_args() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "djbench.measure.drivers.loadgen", "--port", "1", "--duration", "0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and "must be positive" in result.stderr


def test_builtin_refused_port_gives_connect_errors_and_ends() -> None:
    port = free_port()
    spec = LoadSpec(
        host="127.0.0.1",
        port=port,
        method="GET",
        path="/",
        body=None,
        content_type=None,
        connections=2,
        duration=0.5,
    )
    driver = DRIVERS["builtin"]
    out = subprocess.run(driver.argv(spec), capture_output=True, text=True, timeout=30)
    result = driver.parse(out.stdout)
    assert result.requests == 0 and result.errors["connect"] > 0


def access_lines(log: Path, offset: int, path: str) -> int:
    text = log.read_bytes()[offset:].decode()
    return sum(1 for line in text.splitlines() if f'"GET {path} HTTP/1.1" 200' in line)


@pytest.mark.servers
@pytest.mark.parametrize("rate", [None, 300.0])
def test_builtin_count_matches_the_servers_access_log(
    rate: float | None, live_database: str, tmp_path: Path
) -> None:
    """Uvicorn logs every request it answered: the driver must account for exactly those,
    split into warm-up, window and after the window's close (in flight at the close)."""
    import os

    port = free_port()
    log = tmp_path / "uvicorn.log"
    tree = ProcessTree(
        name="uvicorn",
        argv=[
            str(Path(sys.executable).parent / "uvicorn"),
            "--port",
            str(port),
            "--access-log",
            "--log-level",
            "info",
            "sampleproject.asgi:application",
        ],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "sampleproject.settings"},
        cwd=ROOT,
        log_path=log,
    )
    path = "/api/sync/health"
    with running(tree):
        tree.wait_ready(f"http://127.0.0.1:{port}/api/async/health")
        offset = log.stat().st_size
        spec = LoadSpec(
            host="127.0.0.1",
            port=port,
            method="GET",
            path=path,
            body=None,
            content_type=None,
            connections=8,
            duration=1.0,
            rate=rate,
            warmup=0.5,
        )
        driver = DRIVERS["builtin"]
        out = subprocess.run(driver.argv(spec), capture_output=True, text=True, timeout=60)
        result = driver.parse(out.stdout)
    assert result.error_count == 0 and result.requests > 50
    assert result.warmup is not None and result.warmup["requests"] > 0
    after = result.figures.after_window
    assert access_lines(log, offset, path) == result.warmup["requests"] + result.requests + after
    # The window's edges were announced as they happened (the window lasts --duration,
    # or a little more when the event loop wakes late: duration_s is what it lasted).
    opened, closed = (
        float(line.split()[2]) for line in out.stdout.splitlines() if "DJBENCH-WINDOW" in line
    )
    # (open loop: until every request due in the window was answered, so it may run long)
    assert closed - opened >= 0.99  # each mark is printed just after its edge
    assert closed - opened == pytest.approx(result.duration_s, abs=0.02)
    if not rate:
        assert closed - opened < 1.2
    if rate:
        assert result.figures.mode == "open" and after == 0
        assert result.requests == pytest.approx(rate * 1.0, rel=0.05)
        assert result.warmup["settled"] is None  # the open loop's warm-up is fixed
    else:
        assert result.warmup["settled"] is not None
        assert 0 <= after <= spec.connections
        assert result.in_flight == pytest.approx(spec.connections, rel=0.05)


def test_stats_describe() -> None:
    d = stats.describe([100.0, 110.0, 90.0, 105.0, 95.0, 100.0])
    assert d["median"] == 100.0 and d["n"] == 6
    assert d["ci95"] == [90.0, 110.0]
    assert stats.describe([1.0, 2.0, 3.0])["ci95"] is None


class Recorder(http.server.BaseHTTPRequestHandler):
    """A loopback HTTP server that remembers each request's path and headers."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[str, str, str]]] = []

    def do_GET(self) -> None:
        self.seen.append(
            (self.path, self.headers.get("Cookie", ""), self.headers.get("X-Test", ""))
        )
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize("name", ["builtin", "wrk"])
def test_drivers_send_headers_and_cycle_over_paths(name: str) -> None:
    driver = DRIVERS[name]
    if not driver.available():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("wrk is not installed (CI=true: .ci/run installs it)")
        pytest.skip("wrk is not installed")
    Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        spec = LoadSpec(
            host="127.0.0.1",
            port=server.server_address[1],
            method="GET",
            path="/a",
            body=None,
            content_type=None,
            connections=1,
            duration=1.0,
            headers=(("X-Test", "yes"), ("Cookie", "sessionid=abc; csrftoken=t")),
            paths=("/a", "/b", "/c"),
        )
        out = subprocess.run(
            driver.argv(spec),
            env={**os.environ, **driver.env(spec)},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        result = driver.parse(out.stdout)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert result.requests >= 3 and result.non_2xx == 0, result
    assert result.error_count == 0, result.errors
    assert abs(result.requests - len(Recorder.seen)) <= 1  # one may be cut at the deadline
    paths = [p for p, _, _ in Recorder.seen]
    assert set(paths) == {"/a", "/b", "/c"}
    # In turn (wrk builds its first request at start-up, so it may begin at /b).
    order = ["/a", "/b", "/c"]
    assert all(order[(order.index(a) + 1) % 3] == b for a, b in itertools.pairwise(paths))
    assert (
        max(paths.count(p) for p in ["/a", "/b", "/c"])
        - min(paths.count(p) for p in ["/a", "/b", "/c"])
        <= 1
    )
    assert {(c, x) for _, c, x in Recorder.seen} == {("sessionid=abc; csrftoken=t", "yes")}
