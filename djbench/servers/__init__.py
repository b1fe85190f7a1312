"""The registry of servers djbench can start, one module per family (uWSGI, Gunicorn,
Uvicorn, Hypercorn, Granian, Daphne; Caddy in front): each holds its entries, their
facts, argv builders, tuned-file syntax, knobs, recycling and the recogniser of its own
command lines. Callers ask the registry, never compare a server's name.

    python -m djbench.servers    # the table docs/servers.md holds (--write rewrites it)

A new server: an entry in its family's module (or a new family module, added to
FAMILIES below), its deploy/ file, its extra in pyproject.toml.
"""

from __future__ import annotations

from pathlib import Path

from djbench.plan.owncommands import OwnCommand
from djbench.plan.tuning import Space
from djbench.servers import caddy, daphne, granian, gunicorn, hypercorn, uvicorn, uwsgi
from djbench.servers.commandline import project_path, words_of
from djbench.servers.entry import (
    Family,
    Features,
    Launch,
    LaunchConfig,
    ServerSpec,
    executable_path,
)

FAMILIES: tuple[Family, ...] = tuple(
    m.FAMILY for m in (uwsgi, gunicorn, daphne, uvicorn, hypercorn, granian)
)
SERVERS: dict[str, ServerSpec] = {
    spec.name: spec
    for module in (uwsgi, gunicorn, daphne, uvicorn, hypercorn, granian)
    for spec in module.ENTRIES
}
EXECUTABLES = tuple(f.executable for f in FAMILIES)
# The distributions whose versions a results file records (djbench.measure.environment):
# the servers', their event loops and parsers, and Caddy's.
SERVER_PACKAGES = (*dict.fromkeys(p for f in FAMILIES for p in f.packages), caddy.PACKAGE)
# benchcalibrate holds runbench against an independent wrk on a server that closes every
# connection (one and four workers) and on one that keeps them (djbench.measure.calibrate).
CLOSES_CONNECTIONS = next(s.name for s in SERVERS.values() if not s.keep_alive)
KEEPS_CONNECTIONS = "uvicorn"


def resolve(names: list[str] | None) -> list[ServerSpec]:
    """Specs for the given names (all when None); raises KeyError on an unknown name."""
    if not names:
        return list(SERVERS.values())
    unknown = [n for n in names if n not in SERVERS]
    if unknown:
        raise KeyError(", ".join(unknown))
    return [SERVERS[n] for n in names]


def _no_build(spec: ServerSpec, config: LaunchConfig) -> Launch:
    raise RuntimeError("a --target is not started by djbench")


def target_spec(url: str) -> ServerSpec:
    """The stand-in for an already-running deployment (--target): nothing to start,
    nothing known of its server; WebSocket scenarios are tried and verified like any."""
    unknown = Features(
        http2="unknown",
        http3="unknown",
        reload="unknown",
        recycle="unknown",
        process_model="unknown (not started by djbench)",
        checked_with="",
    )
    family = Family(
        name="target",
        executable="",
        extra="",
        deploy_file="",
        features=unknown,
        recycle=daphne.recycle,
        tuned=daphne.tuned,
        tuned_file=daphne.FAMILY.tuned_file,
        recognise=lambda root, words, source, app: None,
    )
    return ServerSpec(
        name="target",
        family=family,
        started_here=False,
        tuning=Space(workers=((1, 0),)),
        interface="asgi",
        websocket=True,
        summary=f"an already-running deployment at {url}",
        build=_no_build,
    )


def recognise(root: Path, line: str, source: str, wsgi_app: str) -> OwnCommand | None:
    """The deployment a command line starts, read by its family's recogniser (None: not
    a server djbench knows). Paths written for a container image are the project's."""
    words = words_of(line, EXECUTABLES)
    if not words:
        return None
    words = [(project_path(root, w) or w) if "/" in w or w.endswith(".ini") else w for w in words]
    family = next(f for f in FAMILIES if f.executable == words[0])
    return family.recognise(root, words, source, wsgi_app)


__all__ = [
    "CLOSES_CONNECTIONS",
    "EXECUTABLES",
    "FAMILIES",
    "KEEPS_CONNECTIONS",
    "SERVERS",
    "SERVER_PACKAGES",
    "Launch",
    "LaunchConfig",
    "ServerSpec",
    "executable_path",
    "recognise",
    "resolve",
    "target_spec",
]
