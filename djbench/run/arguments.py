"""runbench's load options, as argparse arguments (the management command adds them).

What each option means is checked and turned into a typed value in
djbench.plan.runplan.from_command; only the declarations live here.
"""

from __future__ import annotations

from argparse import ArgumentParser


def add_load_arguments(parser: ArgumentParser) -> None:
    a = parser.add_argument
    a("--quick", action="store_true", help="the quick profile (about 2 minutes)")
    a("--concurrency", help="comma-separated connection counts (default 32)")
    a("--duration", type=float, help="seconds per timed window (default 3; quick 1)")
    a("--warmup", type=float, help="seconds of warm-up before each window (default 1)")
    a("--trials", type=int, help="trials per pair, each a fresh window (default 4; quick 2)")
    a(
        "--driver",
        default="auto",
        help="auto, builtin, wrk, locust or h2load (auto: builtin, steady-state windows)",
    )
    a(
        "--protocol",
        help="comma-separated h1 (default), h2 (HTTP/2 over TLS: Caddy's with --proxy "
        "caddy-tls, the server's own with none), h2c (HTTP/2 in clear): an axis; with "
        "h2/h2c, --driver auto is h2load",
    )
    a("--rate", type=float, help="open loop at this many requests/s (builtin driver)")
    a(
        "--new-connection-every",
        type=int,
        metavar="N",
        help="builtin driver: a new connection after each connection's Nth answer (1: one "
        "per request; over TLS, a handshake each time)",
    )
    a("--max-error-rate", type=float, default=0.01, help="above it a trial is invalid")
    add_remote_arguments(parser)
    a("--ws-idle", type=int, default=1000, help="idle WebSocket connections to hold (0: off)")
    a("--seed", type=int, help="seed of the interleaving order (default: random, recorded)")
    a("--resume", metavar="RUN_ID", help="finish an interrupted run from its results file")
    add_search_arguments(parser)
    a(
        "--soak",
        metavar="DURATION",
        help="one long window per pair (e.g. 10m, 1h; builtin driver): memory, latency and "
        "worker restarts as a time series, memory growth per hour",
    )
    a(
        "--soak-threshold",
        type=float,
        metavar="MIB_PER_HOUR",
        help='--soak: memory "grows" only when its trend is significant and above this '
        "(default 10 MiB/h)",
    )
    a(
        "--recycle",
        metavar="SETTINGS",
        help='worker recycling axis, e.g. "off;max-requests=5000,jitter=500;max-rss=300" '
        "(also lifetime=SECONDS): each server gets the parts it has, under its own option",
    )
    a(
        "--axis",
        help='settings axes, e.g. "DB_POOL=0,1;MIDDLEWARE_PROFILE=default,lean": every '
        "combination is a variant of each deployment (environment variables the servers "
        "start with), interleaved like the servers",
    )


def add_remote_arguments(parser: ArgumentParser) -> None:
    """Where the load comes from and goes to: Locust's workers, other machines, a target."""
    a = parser.add_argument
    a("--locust-workers", type=int, help="--driver locust: worker processes (default 1)")
    a(
        "--locust-master-bind",
        metavar="HOST[:PORT]",
        help="--driver locust: one master for the whole run listens here (port 5557 by "
        "default) for workers on other machines; outside loopback needs "
        "--allow-remote-target",
    )
    a(
        "--locust-expect-workers",
        type=int,
        help="--locust-master-bind: the remote workers to wait for (default 1)",
    )
    a(
        "--locust-join-timeout",
        type=float,
        help="--locust-master-bind: seconds to wait for them (default 120)",
    )
    a(
        "--advertise-host",
        metavar="HOST",
        help="bind the servers djbench starts here and load them at this address (the "
        "server as the load machines see it); outside loopback needs --allow-remote-target",
    )
    a(
        "--target",
        metavar="URL",
        help="benchmark an already-running deployment at this http:// URL (no server "
        "started, no setup commands); loopback unless --allow-remote-target",
    )
    a(
        "--target-pid",
        type=int,
        metavar="PID",
        help="--target: the leader of its process tree here, to sample its memory",
    )
    a(
        "--allow-remote-target",
        action="store_true",
        help="allow load to (and a Locust master on) an address outside loopback",
    )


def add_search_arguments(parser: ArgumentParser) -> None:
    """What a run searches or provokes instead of fixed trials: the best layout
    (--tune), the capacity at a latency target, the knee, events under load."""
    a = parser.add_argument
    a(
        "--tune",
        action="store_true",
        help="search each server's best configuration (processes, threads, its own knobs) "
        "within --tune-budget; the best are written to the run folder's tuned/",
    )
    a("--tune-budget", metavar="DURATION", help="--tune: wall time at most (default 15m)")
    a(
        "--objective",
        help="--tune: rps (default), rps-per-100mb, or capacity (at --slo-p99, open loop)",
    )
    a(
        "--slo-p99",
        type=float,
        metavar="MS",
        help="--tune: a p99 above this scores nothing; --capacity: the p99 target (default 100)",
    )
    a(
        "--capacity",
        action="store_true",
        help="for every pair, the highest offered rate (open loop) served with p99 within "
        "--slo-p99, errors within --max-error-rate and 99%% completed; the whole command "
        "within --budget (default 15m)",
    )
    a(
        "--sweep",
        action="store_true",
        help="for every pair, closed-loop req/s against concurrency, doubling from 1 until "
        "it stops rising: the knee, with Little's law checked per step (within --budget, "
        "default 15m)",
    )
    a(
        "--churn",
        metavar="KINDS",
        help="reload, kill-worker, recycle (comma-separated): for every pair, a steady "
        "open-loop load (--rate, default 100) with that event a third of the way in; "
        "requests lost and the time to recover per event",
    )
    a("--config-from", metavar="RUN", help="rerun each server at a --tune run's best")
