"""What to run: servers, scenarios, proxies, protocols, layouts, settings axes."""

from __future__ import annotations

from pathlib import Path

from djbench.run.flags.table import (
    ALL,
    RUNS,
    WHAT,
    Flag,
    _joined,
)

WHAT_FLAGS: tuple[Flag, ...] = (
    Flag(
        "servers",
        "comma-separated server names (default: every installed one; with --cost, the servers "
        'whose own cost per request is counted too: none by default, "installed" for all)',
        WHAT,
        ALL,
        cell=lambda o: _joined(o.servers),
    ),
    Flag(
        "scenarios",
        "comma-separated scenario names (default: the profile's set)",
        WHAT,
        RUNS | {"cost"},
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
)
