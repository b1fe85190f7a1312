"""What every server entry of the registry is made of: the launch it is asked for and
the command it gives back, the facts the guide quotes, how its command line says where
it listens, how it recycles workers, and what its family shares (djbench.servers'
modules, one per family, hold the entries). No I/O but reading a deploy/*.args file:
building a command is separate from running it (djbench.launch.process)."""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from djbench.plan.owncommands import OwnCommand
from djbench.plan.recycle import Recycle
from djbench.plan.tuning import PER_CPU, Space

Interface = Literal["wsgi", "asgi"]
PREFORK = "master process + N worker processes"
# Worker recycling by request count is switched off for benchmarks: a recycle inside a
# timed window would be measured as the server's cost, and the servers do not all have
# it (Granian recycles by lifetime, Daphne not at all). Worse, with ONE process Uvicorn
# does not recycle but exits (seen here: `--workers 1 --limit-max-requests 5` answered 6
# requests, then exited with code 0; a lean-middleware run lost uvicorn mid-run). 0 means
# "off" for uWSGI and Gunicorn; Uvicorn and Hypercorn have no "off" value on the command
# line, hence the largest int.
NO_RECYCLE = str(2**31 - 1)


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


def release(version: str) -> tuple[int, ...]:
    """A release as (major, minor), e.g. (26, 2) for 26.2.0: enough to order them."""
    return tuple(int(n) for n in re.findall(r"\d+", version)[:2])


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
        if installed and first and release(installed) < release(first):
            what = "HTTP/2 over TLS" if protocol == "h2" else "HTTP/2 in clear (h2c)"
            return f"the installed release ({installed}) has no {what}; {first} brings it"
        return None


@dataclass(frozen=True)
class Listen:
    """How a server's command line says where it listens: the options a team's command
    carries for it (each takes a value) and djbench's in their place ({host}, {port},
    {bind}: host:port)."""

    flags: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()  # also {kind}: the socket kind its config file used
    # Keys of its config file (an ini's section) that open sockets: a copy without them
    # is what it reads, when the config file is one of the project's.
    ini_keys: tuple[str, ...] = ()
    ini_section: str = ""


NO_LISTEN = Listen()


@dataclass(frozen=True)
class ContainerFile:
    """A team's config file made runnable from the project (a file written for a
    container image): its lines, what was changed and why, and whether the server it
    configures keeps a client's connection open between requests."""

    lines: list[str]
    changes: tuple[str, ...]
    keep_alive: bool


@dataclass(frozen=True)
class RecycleFlags:
    """A --recycle setting in one server's own options."""

    argv: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # parts it has no option for
    refused: str | None = None  # why it cannot recycle as asked (then nothing is run)
    strip: tuple[str, ...] = ()  # options to drop from its deploy/*.args file first


def recycle_mapped(
    family: str, recycle: Recycle, options: dict[str, list[str]], has: str
) -> RecycleFlags:
    """`options`: part -> the server's flag (and its value's prefix); the rest ignored."""
    parts = {
        k: v
        for k, v in {
            "max-requests": recycle.max_requests,
            "jitter": recycle.jitter,
            "max-rss": recycle.max_rss,
            "lifetime": recycle.lifetime,
        }.items()
        if v is not None
    }
    argv = [
        a for key, value in parts.items() if key in options for a in [*options[key], str(value)]
    ]
    ignored = [key for key in parts if key not in options]
    if not any(key in options for key in parts if key != "jitter"):
        return RecycleFlags(
            refused=f"{family} cannot recycle by {', '.join(ignored)}: it recycles {has}"
        )
    return RecycleFlags(argv=argv, ignored=ignored)


Recognise = Callable[[Path, list[str], str, str], OwnCommand | None]
TunedLines = Callable[["ServerSpec", int, int | None, dict[str, str]], list[str]]


def appended(comment: str) -> Callable[[str, list[str], str], str]:
    """A deploy file's syntax where a later line overrides an earlier one (uWSGI's ini,
    Gunicorn's Python file, an .args file's last flag): the tuned lines appended."""

    def write(original: str, lines: list[str], header: str) -> str:
        block = "\n".join([f"{comment} {header}", *lines])
        return f"{original.rstrip()}\n\n{block}\n"

    return write


def toml_replaced(original: str, lines: list[str], header: str) -> str:
    """TOML cannot repeat a key: each tuned `key = value` line replaces the key's own."""
    text = original
    for line in lines:
        key = line.split("=", 1)[0].strip()
        pattern = re.compile(rf"^{re.escape(key)}\s*=.*$", re.M)
        text = pattern.sub(line, text) if pattern.search(text) else f"{text.rstrip()}\n{line}\n"
    return f"# {header}\n{text}"


@dataclass(frozen=True)
class Family:
    """What a family's entries share (uWSGI, Gunicorn, Uvicorn, Hypercorn, Granian,
    Daphne): its executable and package extra, its deploy file, its facts, its own TLS
    and HTTP/2, where its command line listens, its recycling, how a tuned layout is
    written into its deploy file, its knobs, and the recogniser of its command lines."""

    name: str
    executable: str
    extra: str
    deploy_file: str
    features: Features
    recycle: Callable[[Recycle, int], RecycleFlags]
    tuned: TunedLines
    tuned_file: Callable[[str, list[str], str], str]
    recognise: Recognise
    listen: Listen = NO_LISTEN
    own: OwnProtocols = OwnProtocols(why="no TLS of its own is known to djbench")
    knobs: dict[str, str] = field(default_factory=dict)  # knob -> its flag
    # The distributions a results file records for it (its loops and parsers too).
    packages: tuple[str, ...] = ()
    # A team's config file (its lines, the project's folder) as djbench runs it from
    # the project; None: run as written.
    container_file: Callable[[list[str], Path], ContainerFile] | None = None


@dataclass(frozen=True)
class ServerSpec:
    """One entry of the registry: its family's facts, and what is its own."""

    name: str
    family: Family
    interface: Interface
    websocket: bool
    summary: str
    build: Callable[[ServerSpec, LaunchConfig], Launch]
    requires: tuple[str, ...] = ()  # importable modules it needs
    extra_override: str | None = None  # the pyproject extra, when not the family's
    deploy_override: str | None = None  # its deploy file, when not the family's
    features_override: Features | None = None
    default_threads: int | None = None
    # Worker processes are the server's own; False: one process whatever --workers says.
    multi_worker: bool = True
    # Keeps a client's connection open between requests (HTTP/1.1 keep-alive). False:
    # a new connection per request, which h2load's timed HTTP/1.1 run never ends against.
    keep_alive: bool = True
    # What --tune searches and --workers auto chooses (djbench.plan.tuning.Space).
    tuning: Space = PER_CPU
    # Why a view that blocks without yielding can starve its connections here (an event
    # loop or greenlet hub serving many connections in one thread): said beside a pair
    # whose requests timed out or whose connections went unserved. None: not known to.
    starves_when_blocked: str | None = None
    # False for the stand-in of a deployment djbench did not start (--target): what is
    # learnt by running this project's code in-process does not describe it.
    started_here: bool = True

    @property
    def executable(self) -> str:  # its console script in the environment's bin/
        return self.family.executable

    @property
    def extra(self) -> str:  # pip install "djbench[<extra>]"
        return self.extra_override or self.family.extra

    @property
    def deploy_file(self) -> str:
        return self.deploy_override or self.family.deploy_file

    @property
    def features(self) -> Features:
        return self.features_override or self.family.features

    @property
    def own(self) -> OwnProtocols:
        return self.family.own

    @property
    def listen(self) -> Listen:
        return self.family.listen

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
        return self.family.recycle(recycle, workers)

    def knob_argv(self, knobs: tuple[tuple[str, str], ...]) -> list[str]:
        """The flags of a candidate's knobs (an unknown knob is an error)."""
        argv: list[str] = []
        for name, value in knobs:
            flag = self.family.knobs.get(name)
            if flag is None:
                raise ValueError(f"{self.name} has no knob {name!r}")
            argv += [flag, value]
        return argv

    def tuned_settings(self, workers: int, threads: int | None, knobs: dict[str, str]) -> list[str]:
        """The lines that give this server a layout in its deploy file's own syntax."""
        return self.family.tuned(self, workers, threads, knobs)

    def tuned_file(self, original: str, lines: list[str], header: str) -> str:
        return self.family.tuned_file(original, lines, header)


# --- reading and building command lines ------------------------------------------


def executable_path(name: str) -> str | None:
    """A console script next to this interpreter first (the venv), then PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    return shutil.which(name)


def read_args(path: Path) -> list[str]:
    """A deploy/*.args file: command-line flags, one or more per line, `#` comments."""
    args: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        args.extend(shlex.split(line, comments=True))
    return args


def without(argv: list[str], flags: tuple[str, ...]) -> list[str]:
    """argv without the given flags and their values (`--flag value` or `--flag=value`)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in flags:
            skip = "=" not in arg
            continue
        kept.append(arg)
    return kept


def exe(spec: ServerSpec) -> str:
    return executable_path(spec.executable) or spec.executable


def bind(config: LaunchConfig) -> str:
    host = f"[{config.host}]" if ":" in config.host else config.host
    return f"{host}:{config.port}"


def recycle_argv(spec: ServerSpec, config: LaunchConfig, off: list[str]) -> list[str]:
    """The recycling flags a builder appends: `off` (its benchmark default) unless asked."""
    if config.recycle is None:
        return off
    return spec.recycling(config.recycle, config.workers).argv


def args_file(spec: ServerSpec, config: LaunchConfig) -> list[str]:
    """The deploy/*.args file's flags, without those a --recycle setting replaces."""
    argv = read_args(config.config_file)
    if config.recycle is None:
        return argv
    return without(argv, spec.recycling(config.recycle, config.workers).strip)


def protocol_argv(spec: ServerSpec, config: LaunchConfig) -> list[str]:
    """The server's own TLS or h2c flags for this launch (nothing for plain HTTP/1.1)."""
    fill = {"host": config.host.replace(":", "\\:"), "port": str(config.port)}
    if config.tls is not None:
        fill.update(cert=config.tls[0], key=config.tls[1])
        return [arg.format(**fill) for arg in spec.own.tls]
    return list(spec.own.h2c) if config.h2c else []


def threads_of(spec: ServerSpec, config: LaunchConfig) -> int | None:
    return config.threads if config.threads is not None else spec.default_threads


def listening(spec: ServerSpec, config: LaunchConfig) -> list[str]:
    """The executable, its deploy .args file, and where and how many: the opening every
    .args-file server (Uvicorn, Granian) shares."""
    return [
        exe(spec),
        *args_file(spec, config),
        "--host",
        config.host,
        "--port",
        str(config.port),
        "--workers",
        str(config.workers),
    ]
