"""The registry of servers djbench can start: names, facts, and argv builders.

No I/O happens here except reading a deploy/*.args file: building the command for a
server is separate from running it (see :mod:`djbench.launch.process`).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from djbench.launch.argfile import read_args

Interface = Literal["wsgi", "asgi"]


@dataclass(frozen=True)
class LaunchConfig:
    """What a benchmark controls; everything else comes from the deploy/ file."""

    host: str
    port: int
    workers: int
    threads: int | None  # None: the server's own default from its deploy/ file
    wsgi_app: str  # "module:attribute"
    asgi_app: str
    config_file: Path  # the server's deploy/ file: the project's own, or djbench's default


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    threads: int | None = None  # what the server will really run with


@dataclass(frozen=True)
class Features:
    """Facts for the deployment guide, for the version named in `checked_with`."""

    http2: str
    http3: str
    reload: str
    recycle: str
    process_model: str
    checked_with: str


@dataclass(frozen=True)
class ServerSpec:
    name: str
    interface: Interface
    websocket: bool
    extra: str  # the pyproject extra that installs it: pip install "djbench[<extra>]"
    requires: tuple[str, ...]  # importable modules it needs
    executable: str  # console script in the environment's bin/
    deploy_file: str
    summary: str
    build: Callable[[ServerSpec, LaunchConfig], Launch]
    features: Features
    default_threads: int | None = None
    # Worker processes are the server's own; False: one process whatever --workers says.
    multi_worker: bool = True

    def missing(self) -> list[str]:
        """What is not installed for this server (empty when it can run)."""
        gone = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if executable_path(self.executable) is None:
            gone.append(self.executable)
        return gone

    def launch(self, config: LaunchConfig) -> Launch:
        return self.build(self, config)


def executable_path(name: str) -> str | None:
    """A console script next to this interpreter first (the venv), then PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    return shutil.which(name)


def _exe(spec: ServerSpec) -> str:
    return executable_path(spec.executable) or spec.executable


def _bind(config: LaunchConfig) -> str:
    host = f"[{config.host}]" if ":" in config.host else config.host
    return f"{host}:{config.port}"


# Worker recycling by request count is switched off for benchmarks: a recycle inside a
# timed window would be measured as the server's cost, and the servers do not all have
# it (Granian recycles by lifetime, Daphne not at all). Worse, with ONE process Uvicorn
# does not recycle but exits (seen here: `--workers 1 --limit-max-requests 5` answered 6
# requests, then exited with code 0; a lean-middleware run lost uvicorn mid-run). 0 means
# "off" for uWSGI and Gunicorn; Uvicorn and Hypercorn have no "off" value on the command
# line, hence the largest int.
NO_RECYCLE = str(2**31 - 1)


def _threads(spec: ServerSpec, config: LaunchConfig) -> int | None:
    return config.threads if config.threads is not None else spec.default_threads


# --- builders ---------------------------------------------------------------------


def _uwsgi(spec: ServerSpec, config: LaunchConfig) -> Launch:
    threads = _threads(spec, config) or 1
    argv = [
        _exe(spec),
        "--ini",
        str(config.config_file),
        "--module",
        config.wsgi_app,
        "--processes",
        str(config.workers),
        "--threads",
        str(threads),
        "--max-requests",
        "0",
        "--disable-logging",
    ]
    return Launch(argv=argv, env={"DJANGO_BIND": _bind(config)}, threads=threads)


def _gunicorn(worker_class: str, app: Literal["wsgi", "asgi"]) -> Callable[..., Launch]:
    def build(spec: ServerSpec, config: LaunchConfig) -> Launch:
        threads = _threads(spec, config)
        argv = [
            _exe(spec),
            "-c",
            str(config.config_file),
            "--bind",
            _bind(config),
            "--workers",
            str(config.workers),
            "--worker-class",
            worker_class,
            "--max-requests",
            "0",
        ]
        if worker_class == "gthread":
            argv += ["--threads", str(threads)]
        argv.append(config.wsgi_app if app == "wsgi" else config.asgi_app)
        return Launch(argv=argv, threads=threads if worker_class == "gthread" else 1)

    return build


def _uvicorn(loop: str, http: str) -> Callable[..., Launch]:
    def build(spec: ServerSpec, config: LaunchConfig) -> Launch:
        argv = [
            _exe(spec),
            *read_args(config.config_file),
            "--host",
            config.host,
            "--port",
            str(config.port),
            "--workers",
            str(config.workers),
            "--loop",
            loop,
            "--http",
            http,
            "--limit-max-requests",
            NO_RECYCLE,
            config.asgi_app,
        ]
        return Launch(argv=argv)

    return build


def _daphne(spec: ServerSpec, config: LaunchConfig) -> Launch:
    argv = [
        _exe(spec),
        *read_args(config.config_file),
        "-b",
        config.host,
        "-p",
        str(config.port),
        config.asgi_app,
    ]
    return Launch(argv=argv)


def _hypercorn(worker_class: str) -> Callable[..., Launch]:
    def build(spec: ServerSpec, config: LaunchConfig) -> Launch:
        argv = [
            _exe(spec),
            "--config",
            str(config.config_file),
            "--bind",
            _bind(config),
            "--workers",
            str(config.workers),
            "--worker-class",
            worker_class,
            "--max-requests",
            NO_RECYCLE,
            config.asgi_app,
        ]
        return Launch(argv=argv)

    return build


def _granian(interface: Interface) -> Callable[..., Launch]:
    def build(spec: ServerSpec, config: LaunchConfig) -> Launch:
        argv = [
            _exe(spec),
            *read_args(config.config_file),
            "--host",
            config.host,
            "--port",
            str(config.port),
            "--workers",
            str(config.workers),
        ]
        threads = None
        if interface == "wsgi":
            threads = _threads(spec, config)
            argv += ["--blocking-threads", str(threads)]
        argv.append(config.wsgi_app if interface == "wsgi" else config.asgi_app)
        return Launch(argv=argv, threads=threads)

    return build


# --- facts ------------------------------------------------------------------------

_PREFORK = "master process + N worker processes"
_GUNICORN = Features(
    http2="yes: --http-protocols h1,h2 (TLS), h2c with --http2-cleartext",
    http3="no",
    reload="graceful: SIGHUP restarts workers; USR2 re-execs the master",
    recycle="by requests (max_requests + jitter)",
    process_model=_PREFORK,
    checked_with="gunicorn 27.0.1",
)
_UVICORN = Features(
    http2="no",
    http3="no",
    reload="--reload for development only; with --workers, SIGHUP restarts workers",
    recycle="by requests (--limit-max-requests)",
    process_model="one process, or a supervisor + N workers with --workers",
    checked_with="uvicorn 0.54.0",
)
_HYPERCORN = Features(
    http2="yes (TLS or h2c)",
    http3="yes, with the aioquic extra",
    reload="--reload for development only",
    recycle="by requests (max_requests)",
    process_model="one process, or a parent + N workers",
    checked_with="hypercorn 0.18.0",
)
_GRANIAN = Features(
    http2="yes (--http auto|2)",
    http3="no",
    reload="--reload for development; SIGHUP respawns workers",
    recycle="by lifetime (--workers-lifetime) and by memory (--workers-max-rss)",
    process_model="parent + N workers, each a Rust runtime with Python threads",
    checked_with="granian 2.8.9",
)

SERVERS: dict[str, ServerSpec] = {
    spec.name: spec
    for spec in [
        ServerSpec(
            name="uwsgi",
            interface="wsgi",
            websocket=False,
            extra="uwsgi",
            requires=(),
            executable="uwsgi",
            deploy_file="uwsgi.ini",
            summary="uWSGI, prefork, HTTP/1.1 keep-alive socket in the workers",
            build=_uwsgi,
            default_threads=1,
            features=Features(
                http2="no (put a proxy in front)",
                http3="no",
                reload="graceful: SIGHUP, or touch-reload / chain reload",
                recycle="by requests (max-requests), by memory (reload-on-rss), "
                "stuck requests (harakiri)",
                process_model=_PREFORK,
                checked_with="uwsgi 2.0.31",
            ),
        ),
        ServerSpec(
            name="gunicorn-sync",
            interface="wsgi",
            websocket=False,
            extra="gunicorn",
            requires=("gunicorn",),
            executable="gunicorn",
            deploy_file="gunicorn.conf.py",
            summary="Gunicorn, sync workers (one request at a time per process)",
            build=_gunicorn("sync", "wsgi"),
            features=_GUNICORN,
        ),
        ServerSpec(
            name="gunicorn-gthread",
            interface="wsgi",
            websocket=False,
            extra="gunicorn",
            requires=("gunicorn",),
            executable="gunicorn",
            deploy_file="gunicorn.conf.py",
            summary="Gunicorn, gthread workers (a thread pool per process)",
            build=_gunicorn("gthread", "wsgi"),
            features=_GUNICORN,
            default_threads=4,
        ),
        ServerSpec(
            name="gunicorn-gevent",
            interface="wsgi",
            websocket=False,
            extra="gevent",
            requires=("gunicorn", "gevent"),
            executable="gunicorn",
            deploy_file="gunicorn.conf.py",
            summary="Gunicorn, gevent workers (greenlets, monkey-patched stdlib)",
            build=_gunicorn("gevent", "wsgi"),
            features=_GUNICORN,
        ),
        ServerSpec(
            name="gunicorn-uvicorn",
            interface="asgi",
            websocket=True,
            extra="gunicorn-uvicorn",
            requires=("gunicorn", "uvicorn_worker", "uvloop"),
            executable="gunicorn",
            deploy_file="gunicorn.conf.py",
            summary="Gunicorn managing Uvicorn workers (uvicorn-worker package)",
            build=_gunicorn("uvicorn_worker.UvicornWorker", "asgi"),
            features=_GUNICORN,
        ),
        ServerSpec(
            name="gunicorn-asgi",
            interface="asgi",
            websocket=True,
            extra="gunicorn-asgi",
            requires=("gunicorn.workers.gasgi",),
            executable="gunicorn",
            deploy_file="gunicorn.conf.py",
            summary="Gunicorn's own ASGI worker (-k asgi, Gunicorn >= 27)",
            build=_gunicorn("asgi", "asgi"),
            features=_GUNICORN,
        ),
        ServerSpec(
            name="daphne",
            interface="asgi",
            websocket=True,
            extra="daphne",
            requires=("daphne",),
            executable="daphne",
            deploy_file="daphne.args",
            summary="Daphne (Twisted), the Channels project's server; one process",
            build=_daphne,
            multi_worker=False,
            features=Features(
                http2="yes, with TLS and Twisted's http2 and tls extras",
                http3="no",
                reload="no graceful reload: restart the process",
                recycle="no",
                process_model="one process (run one per core behind a proxy)",
                checked_with="daphne 4.2.3",
            ),
        ),
        ServerSpec(
            name="uvicorn",
            interface="asgi",
            websocket=True,
            extra="uvicorn",
            requires=("uvicorn", "uvloop", "httptools"),
            executable="uvicorn",
            deploy_file="uvicorn.args",
            summary="Uvicorn with uvloop and httptools",
            build=_uvicorn("uvloop", "httptools"),
            features=_UVICORN,
        ),
        ServerSpec(
            name="uvicorn-h11",
            interface="asgi",
            websocket=True,
            extra="uvicorn",
            requires=("uvicorn", "h11"),
            executable="uvicorn",
            deploy_file="uvicorn.args",
            summary="Uvicorn with asyncio and h11 (what a bare `pip install uvicorn` gives)",
            build=_uvicorn("asyncio", "h11"),
            features=_UVICORN,
        ),
        ServerSpec(
            name="hypercorn",
            interface="asgi",
            websocket=True,
            extra="hypercorn",
            requires=("hypercorn",),
            executable="hypercorn",
            deploy_file="hypercorn.toml",
            summary="Hypercorn with the asyncio event loop",
            build=_hypercorn("asyncio"),
            features=_HYPERCORN,
        ),
        ServerSpec(
            name="hypercorn-uvloop",
            interface="asgi",
            websocket=True,
            extra="hypercorn",
            requires=("hypercorn", "uvloop"),
            executable="hypercorn",
            deploy_file="hypercorn.toml",
            summary="Hypercorn with uvloop",
            build=_hypercorn("uvloop"),
            features=_HYPERCORN,
        ),
        ServerSpec(
            name="granian-wsgi",
            interface="wsgi",
            websocket=False,
            extra="granian",
            requires=("granian",),
            executable="granian",
            deploy_file="granian-wsgi.args",
            summary="Granian (Rust HTTP stack), WSGI interface, blocking thread pool",
            build=_granian("wsgi"),
            features=_GRANIAN,
            default_threads=4,
        ),
        ServerSpec(
            name="granian-asgi",
            interface="asgi",
            websocket=True,
            extra="granian",
            requires=("granian",),
            executable="granian",
            deploy_file="granian-asgi.args",
            summary="Granian (Rust HTTP stack), ASGI interface",
            build=_granian("asgi"),
            features=_GRANIAN,
        ),
    ]
}


def resolve(names: list[str] | None) -> list[ServerSpec]:
    """Specs for the given names (all when None); raises KeyError on an unknown name."""
    if not names:
        return list(SERVERS.values())
    unknown = [n for n in names if n not in SERVERS]
    if unknown:
        raise KeyError(", ".join(unknown))
    return [SERVERS[n] for n in names]
