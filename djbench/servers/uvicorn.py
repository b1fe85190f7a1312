"""Uvicorn: one process, or a supervisor and N workers (deploy/uvicorn.args); two entries
that differ by their event loop and HTTP parser.

Facts checked with Uvicorn 0.54.0:
- HTTP/1.1 only (h11 or httptools), no ALPN; its own TLS: --ssl-certfile/--ssl-keyfile.
- uvicorn/supervisors/multiprocess.py: handle_hup -> restart_all. One process (--workers
  1) has no supervisor and SIGHUP ends it: --churn runs it with 2.
- Recycling: --limit-max-requests N --limit-max-requests-jitter J; with ONE process it
  does not recycle but exits (seen with 0.54: the server is gone); with --workers >= 2
  the supervisor starts a new worker (seen: both workers replaced after 200 requests).
"""

from __future__ import annotations

from pathlib import Path

from djbench.plan.owncommands import OwnCommand
from djbench.plan.recycle import Recycle
from djbench.servers.commandline import started
from djbench.servers.entry import (
    NO_RECYCLE,
    Family,
    Features,
    Launch,
    LaunchConfig,
    Listen,
    OwnProtocols,
    RecycleFlags,
    ServerSpec,
    appended,
    listening,
    protocol_argv,
    recycle_argv,
    recycle_mapped,
)

# The entries share uvicorn.args and differ by a flag the builder adds: the flag's value
# per entry, used by the builder and written into a tuned file alike (a later flag wins,
# so the tuned file of one would not start the other).
FLAVOUR = {"uvicorn": ("uvloop", "httptools"), "uvicorn-h11": ("asyncio", "h11")}


def recycle(recycle: Recycle, workers: int) -> RecycleFlags:
    if recycle.off:
        return RecycleFlags(argv=["--limit-max-requests", NO_RECYCLE])
    if workers < 2 and recycle.max_requests is not None:
        return RecycleFlags(
            refused="uvicorn with one process exits at --limit-max-requests instead of "
            "recycling; run --workers 2 or more"
        )
    return recycle_mapped(
        "uvicorn",
        recycle,
        {
            "max-requests": ["--limit-max-requests"],
            "jitter": ["--limit-max-requests-jitter"],
        },
        "by requests only (--limit-max-requests)",
    )


def build(spec: ServerSpec, config: LaunchConfig) -> Launch:
    loop, http = FLAVOUR[spec.name]
    argv = [
        *listening(spec, config),
        "--loop",
        loop,
        "--http",
        http,
        *recycle_argv(spec, config, ["--limit-max-requests", NO_RECYCLE]),
        *protocol_argv(spec, config),
        config.asgi_app,
    ]
    return Launch(argv=argv)


def tuned(spec: ServerSpec, workers: int, threads: int | None, knobs: dict[str, str]) -> list[str]:
    loop, http = FLAVOUR[spec.name]
    return [f"--workers {workers}", f"--loop {loop}", f"--http {http}"]


def recognise(root: Path, words: list[str], source: str, wsgi_app: str) -> OwnCommand | None:
    return started("uvicorn", words, source)


FAMILY = Family(
    name="uvicorn",
    executable="uvicorn",
    extra="uvicorn",
    deploy_file="uvicorn.args",
    packages=("uvicorn", "uvloop", "httptools", "h11", "websockets"),
    features=Features(
        http2="no",
        http3="no",
        reload="--reload for development only; with --workers, SIGHUP restarts workers",
        recycle="by requests (--limit-max-requests)",
        process_model="one process, or a supervisor + N workers with --workers",
        checked_with="uvicorn 0.54.0",
        reload_signal="SIGHUP",
    ),
    own=OwnProtocols(
        tls=("--ssl-certfile", "{cert}", "--ssl-keyfile", "{key}"),
        hint="Uvicorn speaks HTTP/1.1 only (no release has HTTP/2): put Caddy in front",
    ),
    listen=Listen(
        flags=("--host", "--port", "--uds", "--fd"), argv=("--host", "{host}", "--port", "{port}")
    ),
    recycle=recycle,
    tuned=tuned,
    tuned_file=appended("#"),
    recognise=recognise,
)

ENTRIES = (
    ServerSpec(
        name="uvicorn",
        family=FAMILY,
        interface="asgi",
        websocket=True,
        requires=("uvicorn", "uvloop", "httptools"),
        summary="Uvicorn with uvloop and httptools",
        build=build,
    ),
    ServerSpec(
        name="uvicorn-h11",
        family=FAMILY,
        interface="asgi",
        websocket=True,
        requires=("uvicorn", "h11"),
        summary="Uvicorn with asyncio and h11 (what a bare `pip install uvicorn` gives)",
        build=build,
    ),
)
