"""runbench's jobs and options, declared once, as data.

Every option is one :class:`Flag`: its flag, type, help, the heading it is listed
under, the jobs (modes) that use it, what it needs beside it, and how a matrix cell's
child run is given it again (``cell``: spelled from the resolved
:class:`~djbench.plan.runplan.RunOptions`). From this table alone come the argparse
parser (:func:`djbench.run.cli.add_arguments`), the one generic check of which option
goes with which job (:func:`djbench.run.cli.check`), a matrix cell's argv
(:func:`djbench.run.cli.cell_argv`) and the option reference of the documentation
(:func:`djbench.run.cli.reference`). A new option is one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from djbench.measure.drivers import DRIVERS
from djbench.plan.runplan import RunOptions
from djbench.results import decide
from djbench.run.services import DEFAULT_POSTGRES, DEFAULT_REDIS

MATRIX_BUDGET = "15m"  # --matrix without --budget: the whole command's wall time


@dataclass(frozen=True)
class Job:
    """One job runbench does (a mode): the switch that asks for it and, for refusals,
    what it decides by itself."""

    name: str
    switch: str | None  # None: the plain run, asked for by no switch
    summary: str
    owns: str = ""  # "--capacity chooses the rates and connections itself: leave out X"
    # What to do instead, for an option it refuses (by dest), said after the refusal.
    instead: tuple[tuple[str, str], ...] = ()


# In order of precedence: the first whose switch is given is the run's job.
JOBS: dict[str, Job] = {
    j.name: j
    for j in (
        Job("list", "--list", "list servers and scenarios, then exit", "lists and exits"),
        Job("verify", "--verify-only", "the verify gate only: nothing timed", "times nothing"),
        Job(
            "matrix",
            "--matrix",
            "one plan in an isolated environment per version, rounds interleaved, a "
            "paired verdict per pair; exit 1 when anything got worse",
            "runs the same plan in every cell",
            (
                ("soak", "run the soak in each environment separately"),
                (
                    "tune",
                    "tune in one environment first (runbench --tune), then compare the "
                    "cells at an equal configuration",
                ),
                ("target", "it builds environments to start servers in; --target starts none"),
            ),
        ),
        Job(
            "tune",
            "--tune",
            "search each server's best configuration (processes, threads, its knobs)",
            "searches each server's layout itself",
        ),
        Job(
            "churn",
            "--churn",
            "events under a steady open-loop load: requests lost, time to recover",
            "runs one open-loop window per event at --rate",
        ),
        Job(
            "capacity",
            "--capacity",
            "the highest offered rate each pair serves within a p99 target",
            "chooses the rates and connections itself",
        ),
        Job(
            "sweep",
            "--sweep",
            "closed-loop req/s against concurrency, doubling until it stops rising",
            "chooses the concurrency itself",
        ),
        Job(
            "soak",
            "--soak",
            "one long window per pair: memory and latency as a time series",
            "sets one long window itself",
        ),
        Job("rounds", None, "every server in interleaved rounds of timed windows, ranked"),
    )
}

ALL = frozenset(JOBS)
RUNS = ALL - {"list"}  # everything that starts a server
TIMED = RUNS - {"verify"}  # everything that loads one
TARGETABLE = frozenset({"rounds", "verify", "capacity", "sweep"})  # what --target runs

Spell = Callable[[RunOptions], "str | bool | None"]


@dataclass(frozen=True)
class Flag:
    """One runbench option. ``type`` None is a switch; ``cell`` None: a matrix cell's
    run is not given it (the matrix decides it, or it is the parent's alone)."""

    dest: str
    help: str
    group: str
    modes: frozenset[str] = ALL
    type: Callable[[str], Any] | None = str
    metavar: str | None = None
    requires: tuple[str, ...] = ()  # dests that must be given with it
    example: str = "1"  # a valid value, for the generic check's tests
    cell: Spell | None = None
    const: str | None = None  # --redis alone means this
    hidden: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.dest.replace("_", "-")


def _g(value: float | None) -> str | None:
    return None if value is None else f"{value:g}"


def _joined(values: list[Any], *, unless: list[Any] | None = None) -> str | None:
    return None if not values or values == unless else ",".join(str(v) for v in values)


def _locust(bind: bool, spell: Spell) -> Spell:
    """A Locust option is given to a cell when its driver has worker processes, by where
    they run (here: --locust-workers; elsewhere: --locust-master-bind and the rest)."""

    def workers(o: RunOptions) -> bool:
        driver = DRIVERS.get(o.driver)
        return driver is not None and driver.worker_processes

    return lambda o: spell(o) if workers(o) and (o.locust_master_bind is not None) == bind else None


JOB = "jobs (one per run; none: the plain run)"
WHAT = "what to run"
LOAD = "load"
SEARCH = "searches and their targets"
MATRIX = "--matrix (upgrade validation)"
REMOTE = "where the load comes from and goes to"
FILES = "services and files"

FLAGS: tuple[Flag, ...] = (
    # --- jobs ------------------------------------------------------------------------
    Flag("list", JOBS["list"].summary, JOB, frozenset({"list"}), None),
    Flag("verify_only", JOBS["verify"].summary, JOB, frozenset({"verify"}), None),
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
        "--slo-p99, errors within --max-error-rate and 99%% completed; the whole command "
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
        cell=lambda o: _g(o.soak),
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
    # --- what to run -----------------------------------------------------------------
    Flag(
        "servers",
        "comma-separated server names (default: every installed one)",
        WHAT,
        cell=lambda o: _joined(o.servers),
    ),
    Flag(
        "scenarios",
        "comma-separated scenario names (default: the profile's set)",
        WHAT,
        RUNS,
        cell=lambda o: _joined(o.scenarios),
        example="health-sync",
    ),
    Flag(
        "scenario_file",
        "scenario file (default: DJBENCH['SCENARIOS'])",
        WHAT,
        type=Path,
        cell=lambda o: o.scenario_file,
        example="scenarios.toml",
    ),
    Flag(
        "proxy",
        "none (default), caddy, caddy-tls (Caddy terminating TLS), comma-separated",
        WHAT,
        RUNS,
        cell=lambda o: _joined(o.proxies),
        example="none",
    ),
    Flag(
        "protocol",
        "comma-separated h1 (default), h2 (HTTP/2 over TLS: Caddy's with --proxy "
        "caddy-tls, the server's own with none), h2c (HTTP/2 in clear): an axis; with "
        "h2/h2c, --driver auto is h2load",
        WHAT,
        RUNS,
        cell=lambda o: _joined(o.protocols, unless=["h1"]),
        example="h1",
    ),
    Flag(
        "workers",
        "worker processes per server (default 1), or auto: the layout each server's "
        "documentation recommends for the CPUs it is pinned to",
        WHAT,
        RUNS - {"tune"},
        cell=lambda o: "auto" if o.workers_auto else str(o.workers),
    ),
    Flag(
        "threads",
        "threads per worker where the server has them",
        WHAT,
        RUNS - {"tune"},
        int,
        cell=lambda o: None if o.threads is None else str(o.threads),
    ),
    Flag(
        "cpus",
        "auto (default), none, or SERVER/DRIVER CPU lists like 0/1",
        WHAT,
        RUNS,
        cell=lambda o: o.cpus,
        example="auto",
    ),
    Flag(
        "port",
        "client-facing port (default: a free one per server)",
        WHAT,
        RUNS,
        int,
        cell=lambda o: None if o.port is None else str(o.port),
        example="8000",
    ),
    Flag(
        "axis",
        'settings axes, e.g. "DB_POOL=0,1;MIDDLEWARE_PROFILE=default,lean": every '
        "combination is a variant of each deployment (environment variables the servers "
        "start with), interleaved like the servers",
        WHAT,
        RUNS - {"tune"},
        cell=lambda o: ";".join(f"{k}={','.join(v)}" for k, v in o.axes.items()) or None,
        example="DB_POOL=0,1",
    ),
    Flag(
        "recycle",
        'worker recycling axis, e.g. "off;max-requests=5000,jitter=500;max-rss=300" (also '
        "lifetime=SECONDS): each server gets the parts it has, under its own option",
        WHAT,
        RUNS - {"tune", "churn"},
        cell=lambda o: ";".join(o.recycle) or None,
        example="off",
    ),
    # --- load ------------------------------------------------------------------------
    Flag(
        "quick",
        "the quick profile (about 2 minutes; too few rounds for a verdict)",
        LOAD,
        frozenset({"rounds", "matrix", "tune"}),
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
        cell=lambda o: None if o.soak is not None else _g(o.duration),
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
        "rounds: trials per pair, each a fresh window (default 3; quick 2)",
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
        "above it a trial is invalid (default 0.01)",
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
        "seed of the interleaving order (default: random, recorded)",
        LOAD,
        TIMED,
        int,
        cell=lambda o: None if o.seed is None else str(o.seed),
    ),
    Flag(
        "budget",
        f"--matrix: wall time of the whole command (default {MATRIX_BUDGET}); rounds go on "
        "until every pair is decided or it is spent (with --trials N: exactly N rounds). A "
        "plain run: its wall time (default profile: 10m unless --trials is given); after "
        "--trials rounds, more go to the servers whose rank is still open while it lasts",
        LOAD,
        TIMED,
        metavar="DURATION",
        example="10m",
    ),
    # --- searches ----------------------------------------------------------------------
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
        "soak_threshold",
        'memory "grows" only when its trend is significant and above this (default 10 MiB/h)',
        SEARCH,
        frozenset({"soak"}),
        float,
        metavar="MIB_PER_HOUR",
        example="5",
    ),
    # --- the matrix --------------------------------------------------------------------
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
        f"smallest change that counts, and the equivalence margin (default {decide.THRESHOLD})",
        MATRIX,
        frozenset({"matrix"}),
        float,
        example="0.05",
    ),
    Flag(
        "alpha",
        f"false discovery rate per metric over the pairs and the looks (default "
        f"{decide.ALPHA}; paired t on per-round log-ratios)",
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
    # --- where the load comes from and goes to ---------------------------------------
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
    # --- services and files ----------------------------------------------------------
    Flag(
        "output",
        "results folder (default bench-results)",
        FILES,
        type=Path,
        example="bench-results",
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

BY_DEST: dict[str, Flag] = {f.dest: f for f in FLAGS}
