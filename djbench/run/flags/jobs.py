"""The options that choose the job (one per run), resume one or rerun a tuning."""

from __future__ import annotations

from djbench.run.flags.table import (
    JOB,
    JOBS,
    TIMED,
    Flag,
    _g,
)

JOB_FLAGS: tuple[Flag, ...] = (
    Flag("list", JOBS["list"].summary, JOB, frozenset({"list"}), None),
    Flag("verify_only", JOBS["verify"].summary, JOB, frozenset({"verify"}), None),
    Flag("cost", JOBS["cost"].summary, JOB, frozenset({"cost"}), None),
    Flag(
        "cost_seeds",
        "--cost: hash seeds each page is counted under; their spread is what a change "
        "must exceed (default 3)",
        JOB,
        frozenset({"cost", "matrix"}),
        int,
        example="2",
    ),
    Flag(
        "matrix",
        'version matrix, e.g. "django=5.2,6.0" or "ref=main,HEAD": the same plan in one '
        "isolated environment per cell (built with uv), rounds interleaved, each cell "
        "compared with the first; exit code 1 when anything got worse",
        JOB,
        frozenset({"matrix"}),
        metavar="AXES",
        example="ref=main,HEAD",
    ),
    Flag(
        "tune",
        "search each server's best configuration (processes, threads, its own knobs) "
        "within --tune-budget; the best are written to the run folder's tuned/",
        JOB,
        frozenset({"tune"}),
        None,
    ),
    Flag(
        "capacity",
        "for every pair, the highest offered rate (open loop) served with p99 within "
        "--slo-p99, errors within --max-error-rate and 99% completed; the whole command "
        "within --budget (default 15m); with --tune, the tuning's objective",
        JOB,
        frozenset({"capacity", "tune"}),
        None,
    ),
    Flag(
        "sweep",
        "for every pair, closed-loop req/s against concurrency, doubling from 1 until it "
        "stops rising: the knee, with Little's law checked per step (within --budget, "
        "default 15m)",
        JOB,
        frozenset({"sweep"}),
        None,
    ),
    Flag(
        "churn",
        "reload, kill-worker, recycle (comma-separated): for every pair, a steady open-loop "
        "load (--rate, default 100) with that event a third of the way in; requests lost "
        "and the time to recover per event",
        JOB,
        frozenset({"churn"}),
        metavar="KINDS",
        example="reload",
    ),
    Flag(
        "soak",
        "one long window per pair (e.g. 10m, 1h; builtin driver): memory, latency and "
        "worker restarts as a time series, memory growth per hour",
        JOB,
        frozenset({"soak"}),
        metavar="DURATION",
        example="1m",
        cell=lambda o: _g(o.soak_s),
    ),
    Flag(
        "resume",
        "finish an interrupted run from its results file (with the run's own options)",
        JOB,
        frozenset({"rounds"}),
        metavar="RUN_ID",
    ),
    Flag(
        "config_from",
        "rerun each server at a --tune run's best configuration",
        JOB,
        TIMED - {"tune"},
        metavar="RUN",
        cell=lambda o: o.config_from,
    ),
    Flag(
        "until_round",
        "stop after this round, resumable (how --matrix interleaves its cells)",
        JOB,
        frozenset({"rounds"}),
        int,
        hidden=True,
    ),
    Flag(
        "turns",
        "take a turn before every window (FOLDER/NAME: how --matrix alternates its cells' "
        "windows; djbench.run.turns)",
        JOB,
        frozenset({"rounds"}),
        metavar="FOLDER/NAME",
        hidden=True,
    ),
)
