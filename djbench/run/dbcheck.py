"""At the verify gate, before anything is timed: does this server keep database
connections its layout does not explain (issue 36 item 2)?

On PostgreSQL, the server's sessions (by its application_name) are counted once a
small burst has ended: BURST requests at a time, ROUNDS times, to a scenario that
queries the database, then a pause of SETTLE_S. Finished requests should leave at most
the layout's connections (one per worker, or per thread: what persistent connections
are for). A server that keeps more keeps the connection of every request's thread
(persistent connections under ASGI, or one greenlet each: djbench.plan.dbsettings), and
at the planned load it would use every connection its role may open within seconds,
then fail with "too many clients". That is flagged now, as a warning on each of the
deployment's pairs, with the project's own remedy; the pairs still run (and each
server's sessions are ended before the next starts: djbench.launch.dbsessions), and a
deployment so flagged is never recommended.

Why not one request at a time: such a server's connections are also closed when their
threads are collected, so a sequential count rose by 4-9 over 8 requests on bakerydemo
under Uvicorn, and fell by 2 on another try; a burst leaves BURST threads at once.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from djbench.launch import dbsessions
from djbench.launch.live import LiveServer
from djbench.measure.verify import GateVerdict, send
from djbench.plan import dbsettings
from djbench.plan.scenarios import Scenario
from djbench.results.model import Notice

BURST = 8  # requests in flight at once
ROUNDS = 2
SETTLE_S = 0.3  # after the last answer, before the count


def _querying(scenarios: list[Scenario], verdicts: dict[str, GateVerdict]) -> Scenario | None:
    """A verified HTTP scenario that goes through the database (any verified one else)."""
    ok = [s for s in scenarios if s.kind == "http" and verdicts[s.name].status == "ok"]
    orm = [s for s in ok if (s.expect.queries_high or 0) > 0 or s.workload.endswith("orm")]
    found = orm or ok
    return found[0] if found else None


def leak(
    live: LiveServer, scenarios: list[Scenario], verdicts: dict[str, GateVerdict]
) -> Notice | None:
    """A `db_leak` notice when the server keeps more connections than its layout."""
    conninfo = dbsessions.postgres_conninfo()
    scenario = _querying(scenarios, verdicts)
    if conninfo is None or scenario is None or not live.deployment.server.started_here:
        return None
    if dbsettings.pooled():  # a pool holds its minimum open, by design
        return None
    name = live.server.application_name
    target = live.target()
    with ThreadPoolExecutor(BURST) as pool:
        for _ in range(ROUNDS):
            list(pool.map(lambda _: send(target, scenario.request, False), range(BURST)))
    time.sleep(SETTLE_S)
    kept = dbsessions.held(conninfo, name)
    deployment = live.deployment
    explained = max(1, deployment.workers) * max(1, live.threads or 1)
    bound = dbsessions.limit(conninfo, name)
    if kept is None or bound is None or kept <= explained:
        return None
    allowed, open_now = bound
    persistent, value = dbsettings.conn_max_age()
    return Notice(
        code="db_leak",
        params={
            "kept": kept,
            "explained": explained,
            "requests": BURST * ROUNDS,
            "burst": BURST,
            "scenario": scenario.name,
            "limit": allowed,
            "open": open_now,
            "conn_max_age": repr(value) if persistent else "",
            "remedy": dbsettings.remedy(),
        },
    )
