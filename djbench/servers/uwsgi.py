"""uWSGI: prefork workers behind its own HTTP router (deploy/uwsgi.ini).

Facts checked with uWSGI 2.0.31:
- Behind its own HTTP router (deploy/uwsgi.ini, uWSGI's advice for serving HTTP
  directly): the router holds every keep-alive connection, a worker thread serves one
  request at a time. Its http11-socket instead gave a thread one connection for as long
  as the client kept it (1 of 32 served, 2026-12-01).
- It adds every socket it is given: a team's ini's sockets are left out of the copy it
  reads (the Listen's ini_keys); without --die-on-term, SIGTERM makes uWSGI 2.0 reload
  instead of stopping.
- Recycling: --max-requests N, --max-requests-delta J (worker i gets N + i x J:
  staggered, not random), --reload-on-rss MB, --max-worker-lifetime S. Pitfall: a worker
  is never recycled before --min-worker-lifetime (default 10 s), whatever max-requests
  says.
- No HTTP/2 (its --https needs an SSL build and serves HTTP/1.1).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from djbench.plan.owncommands import OwnCommand
from djbench.plan.recycle import Recycle
from djbench.plan.tuning import Space
from djbench.servers.commandline import ini_section, number, option
from djbench.servers.entry import (
    PREFORK,
    Family,
    Features,
    Launch,
    LaunchConfig,
    Listen,
    OwnProtocols,
    RecycleFlags,
    ServerSpec,
    appended,
    bind,
    exe,
    recycle_argv,
    recycle_mapped,
    threads_of,
)

# uWSGI's socket options (ini keys and flags alike): `http` starts its HTTP router,
# `http-socket` makes the workers speak HTTP, `socket` speaks the uwsgi protocol to a
# proxy such as nginx (no HTTP: measured as http-socket, and said).
SOCKETS = ("http", "http-socket", "http11-socket", "https", "socket", "uwsgi-socket")
SECTION = "uwsgi"


def recycle(recycle: Recycle, workers: int) -> RecycleFlags:
    if recycle.off:
        return RecycleFlags(argv=["--max-requests", "0", "--reload-on-rss", "0"])
    return recycle_mapped(
        "uwsgi",
        recycle,
        {
            "max-requests": ["--max-requests"],
            "jitter": ["--max-requests-delta"],
            "max-rss": ["--reload-on-rss"],
            "lifetime": ["--max-worker-lifetime"],
        },
        "by requests, memory and lifetime",
    )


def build(spec: ServerSpec, config: LaunchConfig) -> Launch:
    threads = threads_of(spec, config) or 1
    argv = [
        exe(spec),
        "--ini",
        str(config.config_file),
        "--module",
        config.wsgi_app,
        "--processes",
        str(config.workers),
        "--threads",
        str(threads),
        *recycle_argv(spec, config, ["--max-requests", "0"]),
        "--disable-logging",
    ]
    return Launch(argv=argv, env={"DJANGO_BIND": bind(config)}, threads=threads)


def tuned(spec: ServerSpec, workers: int, threads: int | None, knobs: dict[str, str]) -> list[str]:
    return [f"processes = {workers}", f"threads = {threads or 1}"]


def ini(path: Path) -> dict[str, str] | None:
    """A uWSGI ini's [uwsgi] section (None: not one)."""
    return ini_section(path, SECTION)


def recognise(root: Path, words: list[str], source: str, wsgi_app: str) -> OwnCommand | None:
    config = option(words, "--ini") or next(
        (w for w in words[1:] if w.endswith(".ini") and (root / w).is_file()), None
    )
    found = (ini(root / config) if config else None) or {}
    workers = option(words, "--processes", "-p", "--workers") or found.get("processes")
    threads = option(words, "--threads") or found.get("threads")
    return OwnCommand(
        name="",
        server="uwsgi",
        command=shlex.join(words),
        found_in=source,
        workers=number(workers or found.get("workers")),
        threads=number(threads) or 1,
        config=config,
    )


FAMILY = Family(
    name="uwsgi",
    executable="uwsgi",
    extra="uwsgi",
    deploy_file="uwsgi.ini",
    packages=("uwsgi",),
    features=Features(
        http2="no (put a proxy in front)",
        http3="no",
        reload="graceful: SIGHUP, or touch-reload / chain reload",
        reload_signal="SIGHUP",  # the master reloads every worker gracefully
        recycle="by requests (max-requests), by memory (reload-on-rss), stuck requests (harakiri)",
        process_model=PREFORK,
        checked_with="uwsgi 2.0.31",
    ),
    own=OwnProtocols(
        why="uWSGI speaks no HTTP/2 (its --https needs an SSL build and serves HTTP/1.1): "
        "put a TLS proxy in front (--proxy caddy-tls)"
    ),
    listen=Listen(
        flags=(*(f"--{s}" for s in SOCKETS), "-s"),
        argv=("--{kind}", "{bind}", "--die-on-term"),
        ini_keys=SOCKETS,
        ini_section=SECTION,
    ),
    recycle=recycle,
    tuned=tuned,
    tuned_file=appended(";"),
    recognise=recognise,
)

ENTRIES = (
    ServerSpec(
        name="uwsgi",
        family=FAMILY,
        tuning=Space(threads=(1, 8, 32), layout_threads=8),
        interface="wsgi",
        websocket=False,
        summary="uWSGI, prefork workers behind its own HTTP router (keep-alive)",
        build=build,
        default_threads=1,
    ),
)
