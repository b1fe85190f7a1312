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
- `http-socket` without `http-keepalive` answers HTTP/1.1 with a Content-Length and no
  `Connection: close`, then closes the connection: a client that reuses it reads EOF
  on its next request (wrk counts a read error; djbench's builtin driver resends it).
  A team's file written so (a proxy in front opens a connection per request) is loaded
  with a new connection per request (ContainerFile.keep_alive False).
- A file written for a container (chdir to the image's folder, attach-daemon, a
  migrate hook, uid) is run from the project: container_file() says each change.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from djbench.plan.owncommands import OwnCommand
from djbench.plan.recycle import Recycle
from djbench.plan.tuning import Space
from djbench.servers.commandline import ini_section, number, option
from djbench.servers.entry import (
    PREFORK,
    ContainerFile,
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

# A file written for a container, run from the project (issue 54): what djbench changes
# in the copy it starts, each said with its reason (ContainerFile.changes).
# - Processes beside the server: they would run on the server's CPUs during the windows.
DAEMONS = (
    "attach-daemon", "attach-daemon2", "smart-attach-daemon", "smart-attach-daemon2",
    "attach-control-daemon", "mule", "mules", "farm", "spooler", "cron", "cron2", "unique-cron",
)  # fmt: skip
# - Start hooks (`hook-pre-app = exec:./manage.py migrate`): a migrate or a collectstatic
#   at every start changes the data or the files under the comparison.
HOOK_PREFIXES = ("hook-", "exec-", "call-")
# - Running as another user, detached, or into the image's log and pid files.
DROPPED = {
    "uid": "runs as the user who runs runbench",
    "gid": "runs as the user who runs runbench",
    "chroot": "runs in the project's folder",
    "chown-socket": "djbench's socket is on loopback",
    "daemonize": "runs in the foreground: djbench stops it",
    "daemonize2": "runs in the foreground: djbench stops it",
    "logto": "its log goes to the run's server log",
    "logto2": "its log goes to the run's server log",
    "pidfile": "djbench knows its PID",
    "pidfile2": "djbench knows its PID",
    "safe-pidfile": "djbench knows its PID",
    "touch-reload": "djbench reloads it by signal",
}
# - Paths of the image: the project's folder, file or environment that they end with.
DIRECTORIES = ("chdir", "chdir2", "pythonpath", "python-path", "pp")
ENVIRONMENTS = ("virtualenv", "venv", "home", "pyhome")
FILES = ("wsgi-file", "file", "mount")


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


def _mapped(root: Path, raw: str, directory: bool) -> Path | None:
    """The project's folder or file an image path ends with (/opt/app/src -> src)."""
    parts = Path(raw).parts
    for start in range(1, len(parts)):
        tail = root / Path(*parts[start:])
        if tail.is_dir() if directory else tail.is_file():
            return tail
    return None


def _path_change(key: str, value: str, root: Path) -> tuple[str | None, str]:
    """(the value to run with, or None to drop the line; the reason, "" if kept)."""
    if "$(" in value or not value.startswith("/") or Path(value.split("=")[-1]).exists():
        return value, ""
    if key in ENVIRONMENTS:
        return sys.prefix, f"not here; this environment ({sys.prefix}) instead"
    if key == "static-map" or key == "static-map2":
        mount, _, folder = value.partition("=")
        found = _mapped(root, folder, directory=True)
        if found is None:
            return None, "not here (static files are not what is measured)"
        return f"{mount}={found}", f"the project's {found.relative_to(root)} instead"
    if key in ("chdir", "chdir2"):  # the image's folder of the project (its WORKDIR)
        return str(root), "not here; the project's folder instead"
    found = _mapped(root, value, directory=key in DIRECTORIES)
    if found is None:
        return None, "not here, and the project has no such path"
    return str(found), f"the project's {found.relative_to(root) or '.'} instead"


def _changed(key: str, value: str, root: Path) -> tuple[str | None, str]:
    """A [uwsgi] line as djbench runs it: (its value, or None to leave it out; why)."""
    if key in DAEMONS:
        return None, (
            "not started (a second process on the server's CPUs during the windows; "
            "start it by hand beside the run to count its cost)"
        )
    if key.startswith(HOOK_PREFIXES):
        return None, "not run (a start hook would change the data or files under the comparison)"
    if key in DROPPED:
        return None, DROPPED[key]
    if key in (*DIRECTORIES, *ENVIRONMENTS, *FILES, "static-map", "static-map2"):
        return _path_change(key, value, root)
    return value, ""


def truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("", "0", "false", "no", "off")


def container_file(lines: list[str], root: Path) -> ContainerFile:
    """The ini's lines with what cannot run here changed, each change said."""
    out: list[str] = []
    changes: list[str] = []
    section = ""
    keys: dict[str, str] = {}
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.strip("[]").strip()
        key, eq, value = stripped.partition("=")
        key, value = key.strip(), value.strip()
        if section != SECTION or not eq or stripped.startswith((";", "#")):
            out.append(line)
            continue
        keys[key] = value
        kept, why = _changed(key, value, root)
        if why:
            changes.append(f"{key} = {value}: {why}")
        if kept is None:
            out.append(f"; djbench: {stripped} ({why})")
        else:
            out.append(f"{key} = {kept}" if kept != value else line)
    socket = next((k for k in ("http11-socket", "http-socket", "http") if k in keys), None)
    keep_alive = socket is None or socket == "http11-socket" or truthy(keys.get("http-keepalive"))
    if not keep_alive:
        changes.append(
            f"{socket} without http-keepalive: closes every connection after its answer, "
            "as the proxy in front of it expects: measured with a new connection per request"
        )
    return ContainerFile(lines=out, changes=tuple(changes), keep_alive=keep_alive)


def recognise(root: Path, words: list[str], source: str, wsgi_app: str) -> OwnCommand | None:
    config = option(words, "--ini") or next(
        (w for w in words[1:] if w.endswith(".ini") and (root / w).is_file()), None
    )
    found = (ini(root / config) if config else None) or {}
    workers = option(words, "--processes", "-p", "--workers") or found.get("processes")
    threads = option(words, "--threads") or found.get("threads")
    adapted = None
    if config is not None and found:
        text = (root / config).read_text(encoding="utf-8", errors="replace")
        adapted = container_file(text.splitlines(), root)
    return OwnCommand(
        name="",
        server="uwsgi",
        command=shlex.join(words),
        found_in=source,
        workers=number(workers or found.get("workers")),
        threads=number(threads) or 1,
        config=config,
        changes=adapted.changes if adapted else (),
        keep_alive=adapted.keep_alive if adapted else True,
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
    container_file=container_file,
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
