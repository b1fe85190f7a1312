"""How the load is made, and what the searches aim at."""

from __future__ import annotations

from djbench.run.flags.table import (
    LOAD,
    MATRIX,
    MATRIX_BUDGET,
    SEARCH,
    TIMED,
    Flag,
    _g,
    _joined,
)
from djbench.verdicts import cost, rules

LOAD_FLAGS: tuple[Flag, ...] = (
    Flag(
        "quick",
        "the quick profile, a screen of about 3 minutes: every deployment once (1 s "
        "windows, longer on slow pages), then the leaders' open rankings and the leader's "
        "worker/thread layouts; 2 minutes for a job that runs until it decides (matrix, "
        "capacity, sweep, churn, tune); too few rounds for a verdict",
        LOAD,
        frozenset({"rounds", "matrix", "tune", "capacity", "sweep", "churn"}),
        None,
        cell=lambda o: o.profile == "quick",
    ),
    Flag(
        "concurrency",
        "comma-separated connection counts (default 32)",
        LOAD,
        frozenset({"rounds", "matrix", "tune", "soak"}),
        cell=lambda o: _joined(o.concurrency),
        example="32",
    ),
    Flag(
        "duration",
        "seconds per timed window (default 2; quick 1)",
        LOAD,
        TIMED - {"soak"},
        float,
        cell=lambda o: None if o.soak_s is not None else _g(o.duration),
    ),
    Flag(
        "warmup",
        "seconds of warm-up before each window (default 1)",
        LOAD,
        TIMED,
        float,
        cell=lambda o: _g(o.warmup),
    ),
    Flag(
        "trials",
        "rounds: trials per pair, each a fresh window (default 3; quick 1)",
        LOAD,
        TIMED - {"churn"},
        int,
        cell=lambda o: str(o.trials),
        example="3",
    ),
    Flag(
        "driver",
        "auto (default), builtin, wrk, locust or h2load (auto: builtin, steady-state "
        "windows; h2load when HTTP/2 is asked)",
        LOAD,
        TIMED,
        cell=lambda o: o.driver,
        example="auto",
    ),
    Flag(
        "rate",
        "open loop at this many requests/s (builtin driver)",
        LOAD,
        TIMED - {"capacity", "sweep"},
        float,
        cell=lambda o: _g(o.rate),
        example="100",
    ),
    Flag(
        "new_connection_every",
        "builtin driver: a new connection after each connection's Nth answer (1: one per "
        "request; over TLS, a handshake each time)",
        LOAD,
        TIMED,
        int,
        metavar="N",
        cell=lambda o: None if o.new_connection_every is None else str(o.new_connection_every),
    ),
    Flag(
        "max_error_rate",
        "above it, beyond its 95% interval, a trial is invalid (default 0.01)",
        LOAD,
        TIMED,
        float,
        cell=lambda o: _g(o.max_error_rate),
        example="0.01",
    ),
    Flag(
        "ws_idle",
        "idle WebSocket connections to hold (default 1000; 0: off)",
        LOAD,
        TIMED,
        int,
        cell=lambda o: str(o.ws_idle),
        example="0",
    ),
    Flag(
        "seed",
        "seed of the interleaving order and of a mix's page draws (default: random, recorded)",
        LOAD,
        TIMED,
        int,
        cell=lambda o: None if o.seed is None else str(o.seed),
    ),
    Flag(
        "budget",
        "--matrix: wall time of the rounds (after the cost phase); they go on until every "
        "pair is decided "
        "or it is spent (default: the rounds that flag a 10% change on one pair with 80% "
        f"power at the usual noise, at most {MATRIX_BUDGET}; with --trials N: exactly N "
        "rounds). A "
        "plain run: its wall time (default profile: 10m unless --trials is given); after "
        "--trials rounds, more go to the servers whose rank is still open while it lasts",
        LOAD,
        TIMED,
        metavar="DURATION",
        example="10m",
    ),
    Flag(
        "tune_budget",
        "wall time of the search at most (default 15m)",
        SEARCH,
        frozenset({"tune"}),
        metavar="DURATION",
        example="60",
    ),
    Flag(
        "objective",
        "rps (default), rps-per-100mb, or capacity (at --slo-p99, open loop)",
        SEARCH,
        frozenset({"tune"}),
        example="rps",
    ),
    Flag(
        "slo_p99",
        "--tune: a p99 above this scores nothing; --capacity: the p99 target (default 100)",
        SEARCH,
        frozenset({"tune", "capacity"}),
        float,
        metavar="MS",
        example="100",
    ),
    Flag(
        "capacity_window",
        "--capacity (and a capacity tuning's finals): each steady window's seconds, after "
        "5 s of warm-up (half the window when shorter); default 10; below 10 the answer "
        "says the windows were short",
        SEARCH,
        frozenset({"tune", "capacity"}),
        float,
        metavar="SECONDS",
        example="10",
    ),
    Flag(
        "soak_threshold",
        'memory "grows" only when its trend is significant and above this (default 10 MiB/h)',
        SEARCH,
        frozenset({"soak"}),
        float,
        metavar="MIB_PER_HOUR",
        example="5",
    ),
    Flag(
        "matrix_base",
        "the cell the others are compared with (default: the first)",
        MATRIX,
        frozenset({"matrix"}),
        metavar="CELL",
        example="ref=main",
    ),
    Flag(
        "threshold",
        f"smallest change that counts, and the equivalence margin (default {rules.THRESHOLD})",
        MATRIX,
        frozenset({"matrix"}),
        float,
        example="0.05",
    ),
    Flag(
        "alpha",
        f"false discovery rate over pairs x metrics x cells and the looks (default "
        f"{rules.ALPHA}; paired t on per-round log-ratios)",
        MATRIX,
        frozenset({"matrix"}),
        float,
        example="0.05",
    ),
    Flag(
        "python",
        "an interpreter to try first",
        MATRIX,
        frozenset({"matrix"}),
        metavar="PATH",
        example="python3",
    ),
    Flag("offline", "build from uv's cache only", MATRIX, frozenset({"matrix"}), None),
    Flag(
        "cost_only",
        "count every cell's cost (instructions per request under Valgrind, as --cost) and "
        "judge it, then stop: no wall-clock rounds, minutes instead of an hour (the CI "
        "workflows' default)",
        MATRIX,
        frozenset({"matrix"}),
        None,
    ),
    Flag(
        "no_cost",
        "skip the cost phase that comes before the rounds when Valgrind is installed",
        MATRIX,
        frozenset({"matrix"}),
        None,
    ),
    Flag(
        "pairing",
        "how a round puts its deployments (a matrix: its cells) side by side: alternate "
        "(alive at once, their windows taking turns page by page, seconds apart: a plain "
        "run's every round on SQLite, its rounds after the first on a database whose "
        "connection limit the servers share or with --ws-idle, a matrix's after the first; "
        "a server that keeps database connections open after its load alone; the "
        "default) or sequential (each one's part of the round back to back)",
        LOAD,
        frozenset({"rounds", "matrix"}),
        metavar="HOW",
        example="sequential",
    ),
    Flag(
        "cost_threshold",
        f"a page is worse on cost when its instructions per request rose by more than this "
        f"and beyond its ratios' range over hash seeds (default {cost.THRESHOLD})",
        MATRIX,
        frozenset({"matrix"}),
        float,
        example="0.02",
    ),
)
