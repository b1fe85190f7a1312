"""The deployments a team runs now, found in its own files (issue 36 item 5).

benchinit looks where teams write how their site is served: a Procfile's lines, a
Dockerfile's CMD (or ENTRYPOINT), uWSGI ini files and Gunicorn config files, and writes
each server command found as a ``[[deployment]]`` of the scenario file, measured by
runbench beside djbench's own layouts (djbench.launch.own_launch starts it as written,
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

import contextlib
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from djbench.plan.owncommands import OwnCommand
from djbench.servers import SERVERS, gunicorn, recognise, uwsgi

SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "static", "media", "__pycache__"}
SEARCH_DEPTH = 2  # folders below the project's root searched for config files


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
            f"{uwsgi.FAMILY.executable} --ini {relative}"
            if path.suffix == ".ini"
            else f"{gunicorn.FAMILY.executable} -c {relative} {wsgi_app}"
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
        base = "yours-" + SERVERS[own.server].family.name
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
            return uwsgi.ini(path) is not None
        return gunicorn.config_file(path)

    return _files(root, wanted)
