"""Gunicorn: one master, N workers of a class (sync, gthread, gevent, Uvicorn's, its own
ASGI), all from deploy/gunicorn.conf.py with the class on the command line.

Facts checked with Gunicorn 27.0.1:
- The sync worker does not support persistent connections (it answers "Connection:
  close"; checked with gunicorn 23-27).
- Its own TLS: --certfile/--keyfile; HTTP/2 only when --http-protocols names h2 (and the
  h2 package is installed), since 25.0 (beta); h2c by --http2-cleartext since 26.2. The
  sync worker takes the flags, warns "HTTP/2 is not supported by the sync worker" and
  still lets ALPN choose h2, then reads the preface as a bad HTTP/1.1 request line
  (djbench.measure.h2probe tells). gthread serves HTTP/2 with one thread per connection
  for the connection's life: connections beyond --threads wait unserved. h2c is served
  to --forwarded-allow-ips peers only (loopback by default).
- Recycling: --max-requests N --max-requests-jitter J (random 0..J per worker); no
  memory or age limit. The master restarts the worker; requests queue in the backlog.
- The -k asgi worker is a module of Gunicorn's own (gunicorn/workers/gasgi.py): whether
  the installed release has it is checked by importing it, never by raising the user's
  pinned version (the extra's lower bound is every Gunicorn's).
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from djbench.plan.owncommands import OwnCommand
from djbench.plan.recycle import Recycle
from djbench.plan.tuning import Space
from djbench.servers.commandline import number, option, python_settings
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
    protocol_argv,
    recycle_argv,
    recycle_mapped,
    threads_of,
)

# Gunicorn's worker class (-k / worker_class) of each entry: its builder and tuned
# files write them, and a team's command is read back by them (with the deprecated
# Uvicorn worker path besides).
WORKER_CLASS = {
    "gunicorn-sync": "sync",
    "gunicorn-gthread": "gthread",
    "gunicorn-gevent": "gevent",
    "gunicorn-uvicorn": "uvicorn_worker.UvicornWorker",
    "gunicorn-asgi": "asgi",
}
CLASSES = {v: k for k, v in WORKER_CLASS.items()} | {
    "uvicorn.workers.UvicornWorker": "gunicorn-uvicorn"
}
CONFIG = "gunicorn.conf.py"  # what Gunicorn reads from its working folder without -c


def recycle(recycle: Recycle, workers: int) -> RecycleFlags:
    if recycle.off:
        return RecycleFlags(argv=["--max-requests", "0"])
    if recycle.max_requests is not None and recycle.jitter is None:
        # The shipped gunicorn.conf.py sets max_requests_jitter = 1000: without an
        # explicit 0, max-requests=100 recycled after 100-1,100 requests (seen in a churn
        # run: no restart in a 6 s window at 50 req/s per worker).
        recycle = dataclasses.replace(recycle, jitter=0)
    return recycle_mapped(
        "gunicorn",
        recycle,
        {"max-requests": ["--max-requests"], "jitter": ["--max-requests-jitter"]},
        "by requests only (max_requests + jitter)",
    )


def builder(app: Literal["wsgi", "asgi"]) -> Callable[[ServerSpec, LaunchConfig], Launch]:
    def build(spec: ServerSpec, config: LaunchConfig) -> Launch:
        worker_class = WORKER_CLASS[spec.name]
        threads = threads_of(spec, config)
        argv = [
            exe(spec),
            "-c",
            str(config.config_file),
            "--bind",
            bind(config),
            "--workers",
            str(config.workers),
            "--worker-class",
            worker_class,
            *recycle_argv(spec, config, ["--max-requests", "0"]),
        ]
        if worker_class == "gthread":
            argv += ["--threads", str(threads)]
        argv += [*config.extra_args, *protocol_argv(spec, config)]
        argv.append(config.wsgi_app if app == "wsgi" else config.asgi_app)
        return Launch(argv=argv, threads=threads if worker_class == "gthread" else 1)

    return build


def tuned(spec: ServerSpec, workers: int, threads: int | None, knobs: dict[str, str]) -> list[str]:
    lines = [f"workers = {workers}", f'worker_class = "{WORKER_CLASS[spec.name]}"']
    if threads is not None and WORKER_CLASS[spec.name] == "gthread":
        lines.append(f"threads = {threads}")
    if "worker_connections" in knobs:
        lines.append(f"worker_connections = {knobs['worker_connections']}")
    return lines


def recognise(root: Path, words: list[str], source: str, wsgi_app: str) -> OwnCommand | None:
    """Gunicorn reads ./gunicorn.conf.py when no -c is given; threads > 1 with the sync
    class is gthread (Gunicorn's own rule)."""
    config = option(words, "-c", "--config")
    if config is None and (root / CONFIG).is_file():
        config = CONFIG
    conf = python_settings(root / config) if config else {}
    worker_class = option(words, "-k", "--worker-class") or conf.get("worker_class") or "sync"
    threads = number(option(words, "--threads") or conf.get("threads")) or 1
    if worker_class == "sync" and threads > 1:
        worker_class = "gthread"
    if not any(":" in w or w.endswith(".wsgi") or w.endswith(".asgi") for w in words[1:]):
        words = [*words, wsgi_app]  # a config file alone: the project's WSGI application
    return OwnCommand(
        name="",
        server=CLASSES.get(worker_class.strip("'\""), "gunicorn-sync"),
        command=shlex.join(words),
        found_in=source,
        workers=number(option(words, "-w", "--workers") or conf.get("workers")) or None,
        threads=threads if worker_class == "gthread" else None,
        config=config,
    )


def config_file(path: Path) -> bool:
    """A Gunicorn config file a project keeps (gunicorn.conf.py, gunicorn_config.py)."""
    return path.suffix == ".py" and "gunicorn" in path.stem and "conf" in path.stem


FEATURES = Features(
    http2="yes since 25.0: --http-protocols h2,h1 (TLS); h2c since 26.2 (--http2-cleartext)",
    http3="no",
    reload="graceful: SIGHUP restarts workers; USR2 re-execs the master",
    recycle="by requests (max_requests + jitter)",
    process_model=PREFORK,
    checked_with="gunicorn 27.0.1",
    reload_signal="SIGHUP",
)
FAMILY = Family(
    name="gunicorn",
    executable="gunicorn",
    extra="gunicorn",
    deploy_file=CONFIG,
    packages=("gunicorn", "gevent", "uvicorn-worker"),
    features=FEATURES,
    own=OwnProtocols(
        since="25.0",
        h2c_since="26.2",
        hint="Gunicorn serves HTTP/2 from its gthread, gevent and asgi workers, never sync",
        tls=("--certfile", "{cert}", "--keyfile", "{key}", "--http-protocols", "h2,h1"),
        # "both", not "prior-knowledge": on a prior-knowledge-only port Gunicorn answers
        # 400 to every HTTP/1.1 request from a trusted peer (its readiness check too).
        h2c=("--http-protocols", "h2,h1", "--http2-cleartext", "both"),
    ),
    listen=Listen(flags=("-b", "--bind"), argv=("--bind", "{bind}")),
    recycle=recycle,
    tuned=tuned,
    tuned_file=appended("#"),
    recognise=recognise,
    knobs={"worker_connections": "--worker-connections"},
)

ENTRIES = (
    ServerSpec(
        name="gunicorn-sync",
        family=FAMILY,
        # Gunicorn's docs: (2 x $num_cores) + 1 workers
        tuning=Space(workers=((1, 0), (2, 1), (4, 1)), layout=(2, 1)),
        interface="wsgi",
        websocket=False,
        requires=("gunicorn",),
        summary="Gunicorn, sync workers (one request at a time per process)",
        build=builder("wsgi"),
        features_override=dataclasses.replace(
            FEATURES,
            http2="no: the sync worker falls back to HTTP/1.1 (gthread, gevent, asgi have it)",
        ),
        # It answers "Connection: close" to every request: its cost per request under
        # Valgrind (djbench.measure.server_cost) is counted with a connection each.
        keep_alive=False,
    ),
    ServerSpec(
        name="gunicorn-gthread",
        family=FAMILY,
        tuning=Space(threads=(4, 16, 32), layout=(2, 1), layout_threads=4),
        interface="wsgi",
        websocket=False,
        requires=("gunicorn",),
        summary="Gunicorn, gthread workers (a thread pool per process)",
        build=builder("wsgi"),
        default_threads=4,
    ),
    ServerSpec(
        name="gunicorn-gevent",
        family=FAMILY,
        tuning=Space(knob=("worker_connections", ("100", "1000")), layout=(2, 1)),
        interface="wsgi",
        websocket=False,
        extra_override="gevent",
        requires=("gunicorn", "gevent"),
        summary="Gunicorn, gevent workers (greenlets, monkey-patched stdlib)",
        build=builder("wsgi"),
        # Measured 2026-12-02 (one worker, 32 keep-alive connections, movies-sync on
        # SQLite, 4 s): answers per connection ranged 11-94, the first answer of some
        # connections came 1.1 s late, and 1-3% of requests passed the 2 s timeout;
        # on health-sync (no database) 183-285, every connection answered within 50 ms.
        # With DB_CONN_MAX_AGE=60 (a connection kept per greenlet) 40-110 and twice
        # the req/s: opening SQLite per request adds to the time the hub is held.
        starves_when_blocked=(
            "gevent switches greenlets only at the I/O it patched: SQLite's C driver "
            "(or any CPU-bound or C-level blocking work) holds the worker's one thread, "
            "greenlets resume in no fair order, and under load some connections wait "
            "past the timeout; use a sync or thread worker for such views, or an "
            "I/O-bound (network) database"
        ),
    ),
    ServerSpec(
        name="gunicorn-uvicorn",
        family=FAMILY,
        interface="asgi",
        websocket=True,
        extra_override="gunicorn-uvicorn",
        requires=("gunicorn", "uvicorn_worker", "uvloop"),
        summary="Gunicorn managing Uvicorn workers (uvicorn-worker package)",
        build=builder("asgi"),
        features_override=dataclasses.replace(
            FEATURES, http2="no: Uvicorn's worker speaks HTTP/1.1 only (-k asgi has HTTP/2)"
        ),
    ),
    ServerSpec(
        name="gunicorn-asgi",
        family=FAMILY,
        interface="asgi",
        websocket=True,
        extra_override="gunicorn-asgi",
        requires=("gunicorn.workers.gasgi",),
        summary="Gunicorn's own ASGI worker (-k asgi), where the installed Gunicorn has it",
        build=builder("asgi"),
    ),
)
