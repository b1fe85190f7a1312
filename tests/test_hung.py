"""Hung requests are the worst requests (issue 22 item 1): a loopback server that answers
at once but never answers 1 request in 50 must read as ~2% errors with a p99 of at
least the request timeout, not as a fast and clean server.

Every driver is run as runbench runs it (its own process, from a LoadSpec); the server
is tests/slowserver.py in this process, so nothing is left running."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from djbench.measure.drivers import DRIVERS, LoadResult
from djbench.measure.drivers.base import request_timeout
from djbench.measure.drivers.loadgen import AFTER_GRACE_S
from tests.slowserver import SlowServer
from tests.test_windows import load

EVERY = 50  # one request in EVERY is never answered


@pytest.fixture
def hanging(one_pass: None) -> Iterator[SlowServer]:
    with SlowServer(delay=0.0, hang_every=EVERY) as server:
        yield server


def error_share(result: LoadResult) -> float:
    errors = sum(result.errors.values())
    return errors / (result.requests + errors)


def test_a_request_timeout_stays_below_the_window_plus_the_grace() -> None:
    assert request_timeout(2.0) == 2.0 < 2.0 + AFTER_GRACE_S
    assert request_timeout(0.3) == 1.0 and request_timeout(600.0) == 10.0


def test_open_loop_counts_the_hung_requests_and_keeps_the_window(hanging: SlowServer) -> None:
    rate, window = 200.0, 2.0
    result = load(
        "builtin", hanging.port, window, rate=rate, warmup=0.5, timeout=request_timeout(window)
    )
    # Offered 200/s for 2 s: about 392 answered and 8 errors, over the window (not the drain).
    assert result.duration_s == pytest.approx(window, abs=0.01)
    assert 0.9 * 0.98 * rate <= result.requests / result.duration_s <= 1.02 * rate
    assert 0.01 <= error_share(result) <= 0.035, result.errors
    assert result.latency_ms["p99"] >= 1000 * request_timeout(window) * 0.95
    assert result.figures.timeout_s == request_timeout(window)


def test_closed_loop_counts_the_hung_requests(hanging: SlowServer) -> None:
    window = 2.0
    result = load("builtin", hanging.port, window, warmup=0.5, timeout=request_timeout(window))
    # Closed loop, a hung request also holds its connection: the warm-up's hung requests
    # time out in the window and count there too (in flight during it), so above 2%.
    assert 0.01 <= error_share(result) <= 0.05, result.errors
    assert result.latency_ms["p99"] >= 1000 * request_timeout(window) * 0.95
    # Some were still unanswered at the close + grace: counted, not dropped.
    assert result.errors["timeout"] >= (result.figures.hung or 0) >= 0


def test_locust_counts_the_requests_that_fail_after_the_close(hanging: SlowServer) -> None:
    if not DRIVERS["locust"].available():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail('Locust is not installed (CI=true: make venv installs "djbench[locust]")')
        pytest.skip('Locust is not installed: pip install "djbench[locust]"')
    window = 2.0
    result = load("locust", hanging.port, window, warmup=0.5, timeout=request_timeout(window))
    assert 0.01 <= error_share(result) <= 0.05, result.errors
    assert result.errors["timeout"] > 0  # socket.timeout reads "timed out": a timeout
    assert result.latency_ms["p99"] >= 1000 * request_timeout(window) * 0.95
    assert result.duration_s == pytest.approx(window, abs=0.2)  # its measured window
