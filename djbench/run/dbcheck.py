"""At the verify gate, before anything is timed: does this server keep a database
connection per request (issue 36 item 2)?

On PostgreSQL, the server's sessions (by its application_name) are counted before and
after REQUESTS requests sent one after another to a scenario that queries the database.
One at a time, a server needs at most its layout's connections (one per worker, or per
thread); a server that holds about one more per request keeps the connection of every
request's thread (persistent connections under ASGI: djbench.plan.dbsettings), and at
the planned load it would use every connection this role may open within seconds, then
fail with "too many clients". That is flagged now, as a warning on each of the
deployment's pairs, with the project's own remedy; the pairs still run (and each
server's sessions are ended before the next starts: djbench.launch.dbsessions), and a
deployment so flagged is never recommended.
"""

from __future__ import annotations

from djbench.launch import dbsessions
from djbench.launch.live import LiveServer
from djbench.measure.verify import Verdict, send
from djbench.plan import dbsettings
from djbench.plan.scenarios import Scenario
from djbench.results.model import Notice

REQUESTS = 8
LEAK_PER_REQUEST = 0.5  # kept connections per request that mean one per request


def _querying(scenarios: list[Scenario], verdicts: dict[str, Verdict]) -> Scenario | None:
    """A verified HTTP scenario that goes through the database (any verified one else)."""
    ok = [s for s in scenarios if s.kind == "http" and verdicts[s.name].status == "ok"]
    orm = [s for s in ok if (s.expect.queries_high or 0) > 0 or s.workload.endswith("orm")]
    found = orm or ok
    return found[0] if found else None


def leak(
    live: LiveServer, scenarios: list[Scenario], verdicts: dict[str, Verdict]
) -> Notice | None:
    """A `db_leak` notice when the server keeps about a connection per request."""
    conninfo = dbsessions.postgres_conninfo()
    scenario = _querying(scenarios, verdicts)
    if conninfo is None or scenario is None or not live.deployment.server.started_here:
        return None
    name = live.server.application_name
    before = dbsessions.held(conninfo, name)
    if before is None:
        return None
    target = live.target()
    for _ in range(REQUESTS):
        send(target, scenario.request, count_queries=False)
    after = dbsessions.held(conninfo, name)
    bound = dbsessions.limit(conninfo, name)
    if after is None or bound is None or (after - before) / REQUESTS < LEAK_PER_REQUEST:
        return None
    allowed, open_now = bound
    persistent, value = dbsettings.conn_max_age()
    return Notice(
        code="db_leak",
        params={
            "kept": after - before,
            "requests": REQUESTS,
            "scenario": scenario.name,
            "limit": allowed,
            "open": open_now,
            "conn_max_age": repr(value) if persistent else "",
            "remedy": dbsettings.remedy(),
        },
    )
