"""h2load (nghttp2's benchmarking client, Debian's nghttp2-client): HTTP/2 and HTTP/1.1
with one client, so that the driver does not change with the protocol (issue 27).

Facts (checked with h2load nghttp2/1.52.0):
- `-D` runs for a duration after `--warm-up-time` (which needs -D): connections are made
  and used during the warm-up, so the measured window starts with them open (wrk's
  window-edge cost does not arise);
- its summary has no percentiles: latencies come from `--log-file` (here /dev/stdout),
  one tab-separated line per request: start time (us since the epoch), status (-1 for
  a failed stream; 0 for a request still in flight when the main duration ended, which
  h2load's summary counts as succeeded: djbench leaves those out, as it leaves out what
  wrk's window end cuts), microseconds until the end of the response;
- `--rps` paces each client from its actual sends, with no correction for coordinated
  omission: djbench uses h2load closed loop only (its honest use);
- `http://` URIs speak h2c with prior knowledge unless `--h1`: h2load prints
  "Application protocol: h2c" whatever the server does (nothing is negotiated); a
  server that does not speak it answers no request ("0 started": gunicorn's sync
  worker), which is how djbench tells (the trial's `protocol_refused`);
- HTTP/1.1 (`--h1`) pitfalls: it reads status 0 (every request "failed") from
  Hypercorn 0.18, whose status line has no reason phrase ("HTTP/1.1 200 "), and its
  `-D` run never ends against a server that closes every connection (gunicorn's sync
  worker; `-n` runs do end): such trials fail by the driver's time limit or as errors.
  Use the builtin driver or wrk for HTTP/1.1 figures there;
- "finished in" counts the warm-up and the main duration; the counts and the request
  log cover the main duration only (its length is read from h2load's own line).
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess

from hdrh.histogram import HdrHistogram

from djbench.measure.drivers.base import (
    Defaults,
    DriverError,
    LoadResult,
    LoadSpec,
    percentiles_ms,
)
from djbench.results.driver_model import DriverFigures

MAX_LATENCY_US = 3_600_000_000
WARMUP_S = 1.0  # h2load's own warm-up, at most: its connections are open when it measures
# h2load ends at its warm-up plus duration; one still running this long after is waiting
# for a connection that the server never serves (seen with Gunicorn 27's gthread worker,
# which holds a thread per HTTP/2 connection: 32 connections on 4 threads). Its own
# inactivity timeout (-N) would end it, but nghttp2 1.52 aborts on it there (libev's
# "I/O watcher with invalid fd" assertion), so the run's time limit ends it instead.
STALL_S = 20.0


def time_limit(duration: float, warmup: float) -> float:
    """How long an h2load run may take before it is stalled."""
    return warmup + WARMUP_S + duration + STALL_S


def stalled(output: str, connections: int) -> str:
    """Why an h2load run that its time limit ended did not end by itself."""
    if "Stopped all clients" in output:
        return (
            f"h2load stopped its clients at the window's end but did not exit within "
            f"{STALL_S:.0f} s: some of its {connections} connections were never answered (a "
            "server serving fewer connections at a time than were opened: Gunicorn's gthread "
            "worker holds a thread per HTTP/2 connection, give it --threads >= connections)"
        )
    return f"h2load did not finish within {STALL_S:.0f} s of its window's end (see its log)"


SUMMARY = re.compile(
    r"requests: (?P<total>\d+) total, (?P<started>\d+) started, (?P<done>\d+) done, "
    r"(?P<ok>\d+) succeeded, (?P<failed>\d+) failed, (?P<errored>\d+) errored, "
    r"(?P<timeout>\d+) timeout"
)
# "Timing-based test with 1s of warm-up time and 1s of main duration": "finished in"
# counts both, the request log and the counts only the main duration.
MAIN = re.compile(r"and (?P<value>[\d.]+)(?P<unit>ms|s|m) of main duration")
PROTOCOL = re.compile(r"Application protocol: (?P<name>\S+)")


class H2loadDriver(Defaults):
    name = "h2load"
    http2 = True
    needs_keep_alive = True
    install_hint = "install h2load (Debian/Ubuntu: apt-get install nghttp2-client)"

    def time_limit(self, duration: float, warmup: float, default: float) -> float:
        return time_limit(duration, warmup)

    def stalled(self, log: str, connections: int) -> str | None:
        return stalled(log, connections)

    def available(self) -> bool:
        return shutil.which("h2load") is not None

    def version(self) -> str | None:
        exe = shutil.which("h2load")
        if exe is None:
            return None
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
        text = (out.stdout or out.stderr).strip()
        return text.splitlines()[0] if text else None

    # The expected status of the spec last built (runs are one at a time): `parse` gets
    # only the output, and h2load cannot be told which status is right.
    expect_status: int | None = None

    def argv(self, spec: LoadSpec) -> list[str]:
        self.expect_status = spec.expect_status
        if spec.method != "GET" or spec.body or len(spec.paths) > 1:
            raise DriverError("the h2load driver loads one GET path (no body, one path)")
        threads = max(1, min(spec.threads, spec.connections))
        warmup_ms = max(1, math.ceil(min(WARMUP_S, spec.warmup or WARMUP_S) * 1000))
        argv = [
            shutil.which("h2load") or "h2load",
            "--clients", str(spec.connections),
            "--threads", str(threads),
            "--max-concurrent-streams", "1",  # one request at a time per connection, as wrk
            "--duration", f"{max(1, math.ceil(spec.duration * 1000))}ms",
            "--warm-up-time", f"{warmup_ms}ms",
            "--log-file", "/dev/stdout",
        ]  # fmt: skip
        if spec.protocol == "h1":
            argv.append("--h1")
        for key, value in spec.headers:
            argv += ["--header", f"{key}: {value}"]
        return [*argv, spec.url()]

    def env(self, spec: LoadSpec) -> dict[str, str]:
        return {}

    def parse(self, stdout: str) -> LoadResult:
        return parse_output(stdout, self.expect_status)


def parse_output(stdout: str, expect_status: int | None = None) -> LoadResult:
    """The summary's counts and duration, the per-request lines' latencies and statuses."""
    summary = SUMMARY.search(stdout)
    main = MAIN.search(stdout)
    if summary is None or main is None:
        raise DriverError("h2load printed no summary (see its log)")
    seconds = float(main["value"]) * {"ms": 0.001, "s": 1.0, "m": 60.0}[main["unit"]]
    histogram = HdrHistogram(1, MAX_LATENCY_US, 3)
    status: dict[str, int] = {}
    failed_streams = cut = 0
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        code, elapsed = int(parts[1]), int(parts[2])
        if code < 0:
            failed_streams += 1
            continue
        if code == 0:  # in flight when the main duration ended: cut, like wrk's window end
            cut += 1
            continue
        status[str(code)] = status.get(str(code), 0) + 1
        histogram.record_value(min(max(1, elapsed), MAX_LATENCY_US))
    answered = sum(status.values())
    protocol = PROTOCOL.search(stdout)
    if not answered and cut > 1 and protocol and protocol["name"] == "http/1.1":
        # Every response read as status 0: the pitfall with a status line that has no
        # reason phrase (Hypercorn), not requests cut at the end (at most one a client).
        raise DriverError(
            f"h2load read no HTTP/1.1 status from this server ({cut} responses as status "
            "0: nghttp2 1.52 cannot parse a status line without a reason phrase, as "
            "Hypercorn sends); measure HTTP/1.1 here with the builtin driver or wrk"
        )
    unexpected = sum(
        n for k, n in status.items()
        if (int(k) != expect_status if expect_status else not 200 <= int(k) < 300)
    )  # fmt: skip
    return LoadResult(
        requests=answered,
        duration_s=seconds,
        errors={  # a timed-out stream is logged as failed (-1) too: counted once
            "connect": 0,
            "read": max(0, failed_streams - int(summary["timeout"])),
            "write": 0,
            "timeout": int(summary["timeout"]),
        },
        non_2xx=sum(n for k, n in status.items() if not 200 <= int(k) < 300),
        latency_ms=percentiles_ms(histogram),
        unexpected=unexpected,
        status=dict(sorted(status.items())),
        figures=DriverFigures(
            protocol=protocol["name"] if protocol else None,
            h2load_total=int(summary["total"]),
            h2load_succeeded=int(summary["ok"]),
            h2load_failed=int(summary["failed"]),
            cut_at_end=cut,
        ),
    )
