"""The matrix's own options, where the load comes from and goes to, services and files."""

from __future__ import annotations

from pathlib import Path

from djbench.run.flags.base import (
    FILES,
    REMOTE,
    RUNS,
    TARGETABLE,
    TIMED,
    Flag,
    _g,
    _locust,
)
from djbench.run.services import DEFAULT_POSTGRES, DEFAULT_REDIS

OTHER_FLAGS: tuple[Flag, ...] = (
    Flag(
        "locust_workers",
        "--driver locust: worker processes (default 1)",
        REMOTE,
        TIMED,
        int,
        cell=_locust(False, lambda o: str(o.locust_workers)),
    ),
    Flag(
        "locust_master_bind",
        "--driver locust: one master for the whole run listens here (port 5557 by default) "
        "for workers on other machines; outside loopback needs --allow-remote-target",
        REMOTE,
        TIMED,
        metavar="HOST[:PORT]",
        cell=_locust(True, lambda o: o.locust_master_bind),
        example="127.0.0.1",
    ),
    Flag(
        "locust_expect_workers",
        "the remote workers to wait for (default 1)",
        REMOTE,
        TIMED,
        int,
        requires=("locust_master_bind",),
        cell=_locust(True, lambda o: str(o.locust_expect_workers)),
    ),
    Flag(
        "locust_join_timeout",
        "seconds to wait for them (default 120)",
        REMOTE,
        TIMED,
        float,
        requires=("locust_master_bind",),
        cell=_locust(True, lambda o: _g(o.locust_join_timeout)),
        example="10",
    ),
    Flag(
        "advertise_host",
        "bind the servers djbench starts here and load them at this address (the server as "
        "the load machines see it); outside loopback needs --allow-remote-target",
        REMOTE,
        RUNS,
        metavar="HOST",
        cell=lambda o: o.advertise_host,
        example="127.0.0.1",
    ),
    Flag(
        "target",
        "benchmark an already-running deployment at this http:// URL (no server started, "
        "no setup commands); loopback unless --allow-remote-target",
        REMOTE,
        TARGETABLE,
        metavar="URL",
        cell=lambda o: o.target,
        example="http://127.0.0.1:8000",
    ),
    Flag(
        "target_pid",
        "the leader of the target's process tree here, to sample its memory",
        REMOTE,
        TARGETABLE,
        int,
        metavar="PID",
        requires=("target",),
        cell=lambda o: None if o.target_pid is None else str(o.target_pid),
    ),
    Flag(
        "allow_remote_target",
        "allow load to (and a Locust master on) an address outside loopback",
        REMOTE,
        RUNS,
        None,
        cell=lambda o: o.allow_remote_target,
    ),
    Flag(
        "output",
        "results folder (default bench-results)",
        FILES,
        type=Path,
        example="bench-results",
    ),
    # What CI reads (djbench.reports.ci_outputs), written at the end from the results.
    Flag(
        "summary",
        "also write a Markdown summary here: the answer, a row per pair, a matrix's "
        "verdicts (for $GITHUB_STEP_SUMMARY or a merge-request comment)",
        FILES,
        TIMED | {"matrix"},
        Path,
        metavar="FILE",
        example="summary.md",
    ),
    Flag(
        "junit",
        "also write JUnit XML here: a testcase per pair (a failure when it may not be "
        "ranked), per matrix verdict (a failure when worse)",
        FILES,
        TIMED | {"matrix"},
        Path,
        metavar="FILE",
        example="junit.xml",
    ),
    Flag(
        "bmf",
        "also write Bencher Metric Format JSON here: throughput with its interval, p99 "
        "latency and peak memory per pair",
        FILES,
        TIMED | {"matrix"},
        Path,
        metavar="FILE",
        example="bmf.json",
    ),
    Flag(
        "on_inconclusive",
        "what a question left open at the budget makes of the exit code: pass (default: "
        "exit 0, said in one line) or fail (exit 1): a matrix pair neither worse nor "
        "equivalent, a threshold too close to call",
        FILES,
        TIMED | {"matrix"},
        metavar="pass|fail",
        example="fail",
    ),
    Flag(
        "no_setup",
        "skip DJBENCH['SETUP_COMMANDS']",
        FILES,
        RUNS,
        None,
        cell=lambda o: not o.setup,
    ),
    Flag(
        "database",
        f"run on PostgreSQL (default {DEFAULT_POSTGRES}), creating the database when missing",
        FILES,
        RUNS,
        metavar="postgres[=URL]",
        example="postgres",
    ),
    Flag(
        "redis",
        f"put the cache and channel layer on Redis (default {DEFAULT_REDIS})",
        FILES,
        RUNS,
        metavar="URL",
        const=DEFAULT_REDIS,
        example=DEFAULT_REDIS,
    ),
)
