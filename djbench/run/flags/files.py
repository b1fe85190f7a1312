"""Services and files: the database and Redis a run uses, where results go, the files
CI reads."""

from __future__ import annotations

from pathlib import Path

from djbench.run.flags.table import (
    FILES,
    RUNS,
    TIMED,
    Flag,
)
from djbench.run.services import DEFAULT_POSTGRES, DEFAULT_REDIS

FILE_FLAGS: tuple[Flag, ...] = (
    Flag(
        "output",
        "results folder (default bench-results)",
        FILES,
        type=Path,
        example="bench-results",
    ),
    Flag(
        "summary",
        "also write a Markdown summary here: the answer, a row per pair, a matrix's "
        "verdicts (for $GITHUB_STEP_SUMMARY or a merge-request comment)",
        FILES,
        TIMED | {"matrix", "cost"},
        Path,
        metavar="FILE",
        example="summary.md",
    ),
    Flag(
        "junit",
        "also write JUnit XML here: a testcase per pair (a failure when it may not be "
        "ranked), per matrix verdict (a failure when worse)",
        FILES,
        TIMED | {"matrix", "cost"},
        Path,
        metavar="FILE",
        example="junit.xml",
    ),
    Flag(
        "bmf",
        "also write Bencher Metric Format JSON here: throughput with its interval, p99 "
        "latency and peak memory per pair; with --cost, instructions per page",
        FILES,
        TIMED | {"matrix", "cost"},
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
        RUNS | {"cost"},
        None,
        cell=lambda o: not o.setup,
    ),
    Flag(
        "database",
        f"run on PostgreSQL (default {DEFAULT_POSTGRES}), creating the database when missing",
        FILES,
        RUNS | {"cost"},
        metavar="postgres[=URL]",
        example="postgres",
    ),
    Flag(
        "redis",
        f"put the cache and channel layer on Redis (default {DEFAULT_REDIS})",
        FILES,
        RUNS | {"cost"},
        metavar="URL",
        const=DEFAULT_REDIS,
        example=DEFAULT_REDIS,
    ),
)
