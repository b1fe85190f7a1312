"""The deployment a team runs now, found in its own files (issue 36 item 5).

benchinit looks where teams write how their site is served: a Procfile's lines, a
Dockerfile's CMD (or ENTRYPOINT), uWSGI ini files and Gunicorn config files, and writes
each server command found as a ``[[deployment]]`` of the scenario file, measured by
runbench beside djbench's own layouts (djbench.launch.owncommand starts it as written,
with only its listening address, and uWSGI's stop signal, made djbench's).

What is read, and what is not:
- a command is recognised by its server's executable (``uwsgi``, ``gunicorn``,
  ``uvicorn``, ``granian``, ``daphne``, ``hypercorn``), also after ``exec``, variable
  assignments, ``python -m`` or a wrapper such as ``newrelic-admin run-program``;
- a path written for the image (``/code/etc/uwsgi.ini``, the Dockerfile's WORKDIR)
  is taken as the project's file it ends with;
- a uWSGI ini or a Gunicorn config that no command names is a deployment of its own;
- docker-compose ``command:`` lines, systemd units and Kubernetes manifests are not
  read (write a ``[[deployment]]`` by hand for those).
The layout (workers, threads) is read where it is written as a number; where it comes
from elsewhere (an environment variable, ``%k``) it is said as unknown.
"""

from __future__ import annotations

import configparser
import contextlib
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

# The executable each server's command starts with, and its registry names.
EXECUTABLES = ("uwsgi", "gunicorn", "uvicorn", "granian", "daphne", "hypercorn")
# Gunicorn's worker class (-k / worker_class) of each of djbench's Gunicorn entries: the
# registry's builders and tuned files write them, and a team's command is read back by
# them (with the deprecated Uvicorn worker path besides).
GUNICORN_WORKER_CLASS = {
    "gunicorn-sync": "sync",
    "gunicorn-gthread": "gthread",
    "gunicorn-gevent": "gevent",
    "gunicorn-uvicorn": "uvicorn_worker.UvicornWorker",
    "gunicorn-asgi": "asgi",
}
GUNICORN_CLASSES = {v: k for k, v in GUNICORN_WORKER_CLASS.items()} | {
    "uvicorn.workers.UvicornWorker": "gunicorn-uvicorn"
}
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "static", "media", "__pycache__"}
SEARCH_DEPTH = 2  # folders below the project's root searched for config files


@dataclass(frozen=True)
class OwnCommand:
    """One way the project's site is served, as its files write it."""

    name: str  # "yours-uwsgi": its label in runbench's tables (--servers takes it)
    server: str  # djbench's registry entry it is measured as ("uwsgi", "gunicorn-sync")
    command: str  # as written, paths made the project's ("uwsgi ./etc/uwsgi.ini")
    found_in: str  # "Procfile (web); Dockerfile CMD"
    workers: int | None = None  # None: not written as a number
    threads: int | None = None
    config: str | None = None  # the config file it reads, relative to the project

    def layout(self) -> str:
        """'2 workers x 4 threads', or what is unknown about it."""
        workers = f"{self.workers} worker(s)" if self.workers else "workers as its environment sets"
        return workers + (f" x {self.threads} thread(s)" if self.threads else "")


def find(root: Path, wsgi_app: str, djbench_dirs: tuple[Path, ...] = ()) -> list[OwnCommand]:
    """Every server command the project's files write, one per (server, command); the
    files of djbench's own deploy folders (the project's copy from `benchinit --deploy`,
    the packaged one when djbench's sources sit in the project) are djbench's."""
    ours = {d.resolve() for d in djbench_dirs}
    found: list[OwnCommand] = []
    for source, line in _commands(root):
        own = recognise(root, line, source, wsgi_app)
        if own is not None:
            found.append(own)
    named = {c.config for c in found if c.config}
    for path in _config_files(root):
        relative = str(path.relative_to(root))
        if relative in named or path.parent.resolve() in ours:
            continue
        command = (
            f"uwsgi --ini {relative}"
            if path.suffix == ".ini"
            else f"gunicorn -c {relative} {wsgi_app}"
        )
        own = recognise(root, command, relative, wsgi_app)
        if own is not None:
            found.append(own)
    return _named(_merged(found))


def _merged(found: list[OwnCommand]) -> list[OwnCommand]:
    """One per (server, command): the places it was found joined."""
    kept: dict[tuple[str, str], OwnCommand] = {}
    for own in found:
        key = (own.server, own.config or own.command)
        if key in kept:
            kept[key] = replace(kept[key], found_in=f"{kept[key].found_in}; {own.found_in}")
        else:
            kept[key] = own
    return list(kept.values())


def _named(found: list[OwnCommand]) -> list[OwnCommand]:
    seen: dict[str, int] = {}
    named = []
    for own in found:
        base = "yours-" + own.server.split("-")[0]
        seen[base] = seen.get(base, 0) + 1
        named.append(replace(own, name=base if seen[base] == 1 else f"{base}-{seen[base]}"))
    return named


def _commands(root: Path) -> list[tuple[str, str]]:
    """(where, command line) from the Procfile and the Dockerfiles."""
    found: list[tuple[str, str]] = []
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in (root / "Procfile").read_text(encoding="utf-8").splitlines():
            kind, sep, command = line.partition(":")
            if sep and kind.strip() and not line.lstrip().startswith("#"):
                found.append((f"Procfile ({kind.strip()})", command.strip()))
    for path in _files(root, lambda p: p.name.startswith("Dockerfile")):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            found += _dockerfile(path, str(path.relative_to(root)))
    return found


def _dockerfile(path: Path, where: str) -> list[tuple[str, str]]:
    """The last CMD and ENTRYPOINT of a Dockerfile, as shell lines."""
    last: dict[str, str] = {}
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    for line in text.splitlines():
        match = re.match(r"\s*(CMD|ENTRYPOINT)\s+(.*)", line, re.I)
        if match:
            last[match.group(1).upper()] = match.group(2).strip()
    lines = []
    for key, value in last.items():
        with contextlib.suppress(ValueError):
            words = json.loads(value)
            if isinstance(words, list):
                value = shlex.join(str(w) for w in words)
        lines.append((f"{where} {key}", value))
    return lines


def _files(root: Path, wanted: Callable[[Path], bool]) -> list[Path]:
    found: list[Path] = []
    layer = [root]
    for _ in range(SEARCH_DEPTH + 1):
        below: list[Path] = []
        for folder in layer:
            with contextlib.suppress(OSError):
                for path in sorted(folder.iterdir()):
                    if (
                        path.is_dir()
                        and path.name not in SKIP_DIRS
                        and not path.name.startswith(".")
                    ):
                        below.append(path)
                    elif path.is_file() and wanted(path):
                        found.append(path)
        layer = below
    return found


def _config_files(root: Path) -> list[Path]:
    """uWSGI ini files (with a [uwsgi] section) and Gunicorn config files."""

    def wanted(path: Path) -> bool:
        if path.suffix == ".ini":
            return _ini(path) is not None
        return path.suffix == ".py" and "gunicorn" in path.stem and "conf" in path.stem

    return _files(root, wanted)


def _ini(path: Path) -> dict[str, str] | None:
    """A uWSGI ini's [uwsgi] section (None: not one)."""
    parser = configparser.RawConfigParser(strict=False, allow_no_value=True)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    if not parser.has_section("uwsgi"):
        return None
    return {k: v or "" for k, v in parser.items("uwsgi")}


def words_of(line: str) -> list[str]:
    """The server's part of a shell line: after the last `&&`/`;`, without `exec`,
    variable assignments and wrappers, starting at the server's executable."""
    for sep in ("&&", ";"):
        line = line.rsplit(sep, 1)[-1]
    try:
        words = shlex.split(line)
    except ValueError:
        return []
    for i, word in enumerate(words):
        if Path(word).name in EXECUTABLES:
            return [Path(word).name, *words[i + 1 :]]
    return []


def option(words: list[str], *names: str) -> str | None:
    """The last value of an option (`--name value`, `--name=value`), None if absent."""
    value = None
    for i, word in enumerate(words):
        head, eq, tail = word.partition("=")
        if head in names:
            if eq:
                value = tail
            elif i + 1 < len(words):
                value = words[i + 1]
    return value


def _number(raw: str | None) -> int | None:
    return int(raw) if raw is not None and raw.strip().isdigit() else None


def project_path(root: Path, raw: str) -> str | None:
    """The project's file a command's path names (the image's /code/etc/x.ini is the
    project's etc/x.ini), relative to the project; None when there is none."""
    parts = Path(raw).parts
    for start in range(len(parts)):
        tail = Path(*parts[start:]) if parts[start:] else None
        if tail is not None and not tail.is_absolute() and (root / tail).is_file():
            return str(tail)
    return None


def recognise(root: Path, line: str, source: str, wsgi_app: str) -> OwnCommand | None:
    """The deployment a command line starts (None: not a server djbench knows)."""
    words = words_of(line)
    if not words:
        return None
    words = [(project_path(root, w) or w) if "/" in w or w.endswith(".ini") else w for w in words]
    executable = words[0]
    if executable == "uwsgi":
        return _uwsgi(root, words, source)
    if executable == "gunicorn":
        return _gunicorn(root, words, source, wsgi_app)
    server = _asgi_server(words)
    if server is None:
        return None
    # Granian's blocking threads serve a WSGI app's requests (under ASGI they only run
    # sync calls); a server with no --workers (Daphne) is one process.
    wsgi = option(words, "--interface") == "wsgi"
    threads = _number(option(words, "--blocking-threads")) if wsgi else None
    return OwnCommand(
        name="",
        server=server,
        command=shlex.join(words),
        found_in=source,
        workers=_number(option(words, "--workers", "-w")) or 1,
        threads=threads,
    )


def _asgi_server(words: list[str]) -> str | None:
    executable = words[0]
    if executable == "granian":
        interface = option(words, "--interface") or "rsgi"  # Granian's own default
        return {"asgi": "granian-asgi", "wsgi": "granian-wsgi"}.get(interface)
    if executable == "hypercorn":
        uvloop = option(words, "--worker-class", "-k") == "uvloop"
        return "hypercorn-uvloop" if uvloop else "hypercorn"
    return executable if executable in ("uvicorn", "daphne") else None


def _uwsgi(root: Path, words: list[str], source: str) -> OwnCommand:
    config = option(words, "--ini") or next(
        (w for w in words[1:] if w.endswith(".ini") and (root / w).is_file()), None
    )
    ini = _ini(root / config) if config else None
    ini = ini or {}
    workers = option(words, "--processes", "-p", "--workers") or ini.get("processes")
    threads = option(words, "--threads") or ini.get("threads")
    return OwnCommand(
        name="",
        server="uwsgi",
        command=shlex.join(words),
        found_in=source,
        workers=_number(workers or ini.get("workers")),
        threads=_number(threads) or 1,
        config=config,
    )


def _gunicorn(root: Path, words: list[str], source: str, wsgi_app: str) -> OwnCommand:
    """Gunicorn reads ./gunicorn.conf.py when no -c is given; threads > 1 with the sync
    class is gthread (Gunicorn's own rule)."""
    config = option(words, "-c", "--config")
    if config is None and (root / "gunicorn.conf.py").is_file():
        config = "gunicorn.conf.py"
    conf = _python_settings(root / config) if config else {}
    worker_class = option(words, "-k", "--worker-class") or conf.get("worker_class") or "sync"
    threads = _number(option(words, "--threads") or conf.get("threads")) or 1
    if worker_class == "sync" and threads > 1:
        worker_class = "gthread"
    if not any(":" in w or w.endswith(".wsgi") or w.endswith(".asgi") for w in words[1:]):
        words = [*words, wsgi_app]  # a config file alone: the project's WSGI application
    return OwnCommand(
        name="",
        server=GUNICORN_CLASSES.get(worker_class.strip("'\""), "gunicorn-sync"),
        command=shlex.join(words),
        found_in=source,
        workers=_number(option(words, "-w", "--workers") or conf.get("workers")) or None,
        threads=threads if worker_class == "gthread" else None,
        config=config,
    )


def _python_settings(path: Path) -> dict[str, str]:
    """`name = literal` lines of a Gunicorn config file (never executed here)."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in path.read_text(encoding="utf-8").splitlines():
            match = re.match(r"^(\w+)\s*=\s*(['\"]?)([\w.]+)\2\s*(#.*)?$", line)
            if match:
                found[match.group(1)] = match.group(3)
    return found
