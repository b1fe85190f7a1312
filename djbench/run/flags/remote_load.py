"""Where the load comes from and goes to: Locust's workers and master, a remote or
running target."""

from __future__ import annotations

from djbench.run.flags.table import (
    REMOTE,
    RUNS,
    TARGETABLE,
    TIMED,
    Flag,
    _g,
    _locust,
)

REMOTE_FLAGS: tuple[Flag, ...] = (
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
)
