"""Reading a team's server command line as its files write it: the server's words, an
option's value, a number, the project's file an image path names, a uWSGI ini's
section, a Gunicorn config's literal settings (never executed). Each family's
recogniser (djbench.servers.<family>.recognise) reads its own with these."""

from __future__ import annotations

import configparser
import contextlib
import re
import shlex
from pathlib import Path

from djbench.plan.owncommands import OwnCommand


def words_of(line: str, executables: tuple[str, ...]) -> list[str]:
    """The server's part of a shell line: after the last `&&`/`;`, without `exec`,
    variable assignments and wrappers, starting at one of `executables`."""
    for sep in ("&&", ";"):
        line = line.rsplit(sep, 1)[-1]
    try:
        words = shlex.split(line)
    except ValueError:
        return []
    for i, word in enumerate(words):
        if Path(word).name in executables:
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


def number(raw: str | None) -> int | None:
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


def ini_section(path: Path, section: str) -> dict[str, str] | None:
    """An ini file's section (None: the file has none, or is not an ini)."""
    parser = configparser.RawConfigParser(strict=False, allow_no_value=True)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    if not parser.has_section(section):
        return None
    return {k: v or "" for k, v in parser.items(section)}


def python_settings(path: Path) -> dict[str, str]:
    """`name = literal` lines of a Python config file (never executed here)."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in path.read_text(encoding="utf-8").splitlines():
            match = re.match(r"^(\w+)\s*=\s*(['\"]?)([\w.]+)\2\s*(#.*)?$", line)
            if match:
                found[match.group(1)] = match.group(3)
    return found


def started(server: str, words: list[str], source: str, threads: int | None = None) -> OwnCommand:
    """A command that says its processes with --workers (one when it does not): the
    deployment it starts, measured as registry entry `server`."""
    return OwnCommand(
        name="",
        server=server,
        command=shlex.join(words),
        found_in=source,
        workers=number(option(words, "--workers", "-w")) or 1,
        threads=threads,
    )
