"""Hypercorn: one process, or a parent and N workers (deploy/hypercorn.toml); two entries
that differ by their event loop (the worker class).

Facts checked with Hypercorn 0.18.0:
- Its own TLS: --certfile/--keyfile; offers h2 and http/1.1 by ALPN, h2c by default.
- hypercorn/run.py: signal.signal(SIGHUP, reload): the parent restarts its workers.
- Recycling: --max-requests N --max-requests-jitter J; recycles with one worker too
  (seen with 0.18: its worker process is replaced, the parent stays).
- Its deploy file is TOML: a key cannot repeat, so a tuned layout replaces the keys.
"""

from __future__ import annotations

from pathlib import Path

from djbench.plan.owncommands import OwnCommand
from djbench.plan.recycle import Recycle
from djbench.servers.commandline import option, started
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
    bind,
    exe,
    protocol_argv,
    recycle_argv,
    recycle_mapped,
    toml_replaced,
)

# The entries share hypercorn.toml and differ by the worker class the builder adds (and
# a tuned file writes).
WORKER_CLASS = {"hypercorn": "asyncio", "hypercorn-uvloop": "uvloop"}


def recycle(recycle: Recycle, workers: int) -> RecycleFlags:
    if recycle.off:
        return RecycleFlags(argv=["--max-requests", NO_RECYCLE])
    return recycle_mapped(
        "hypercorn",
        recycle,
        {"max-requests": ["--max-requests"], "jitter": ["--max-requests-jitter"]},
        "by requests only (--max-requests)",
    )


def build(spec: ServerSpec, config: LaunchConfig) -> Launch:
    argv = [
        exe(spec),
        "--config",
        str(config.config_file),
        "--bind",
        bind(config),
        "--workers",
        str(config.workers),
        "--worker-class",
        WORKER_CLASS[spec.name],
        *recycle_argv(spec, config, ["--max-requests", NO_RECYCLE]),
        *protocol_argv(spec, config),
        config.asgi_app,
    ]
    return Launch(argv=argv)


def tuned(spec: ServerSpec, workers: int, threads: int | None, knobs: dict[str, str]) -> list[str]:
    return [f"workers = {workers}", f'worker_class = "{WORKER_CLASS[spec.name]}"']


def recognise(root: Path, words: list[str], source: str, wsgi_app: str) -> OwnCommand | None:
    uvloop = option(words, "--worker-class", "-k") == "uvloop"
    return started("hypercorn-uvloop" if uvloop else "hypercorn", words, source)


FAMILY = Family(
    name="hypercorn",
    executable="hypercorn",
    extra="hypercorn",
    deploy_file="hypercorn.toml",
    packages=("hypercorn",),
    features=Features(
        http2="yes (TLS or h2c)",
        http3="yes, with the aioquic extra",
        reload="--reload for development; SIGHUP makes the parent restart its workers",
        recycle="by requests (max_requests)",
        process_model="one process, or a parent + N workers",
        checked_with="hypercorn 0.18.0",
        reload_signal="SIGHUP",
    ),
    own=OwnProtocols(tls=("--certfile", "{cert}", "--keyfile", "{key}")),
    listen=Listen(
        flags=("-b", "--bind", "--insecure-bind", "--quic-bind"), argv=("--bind", "{bind}")
    ),
    recycle=recycle,
    tuned=tuned,
    tuned_file=toml_replaced,
    recognise=recognise,
)

ENTRIES = (
    ServerSpec(
        name="hypercorn",
        family=FAMILY,
        interface="asgi",
        websocket=True,
        requires=("hypercorn",),
        summary="Hypercorn with the asyncio event loop",
        build=build,
    ),
    ServerSpec(
        name="hypercorn-uvloop",
        family=FAMILY,
        interface="asgi",
        websocket=True,
        requires=("hypercorn", "uvloop"),
        summary="Hypercorn with uvloop",
        build=build,
    ),
)
