"""A team's own server command (djbench.plan.owncommands), started as written.

Only what djbench must own is changed, and the command record says so:
- where it listens: the flags its registry entry names for that (`Listen.flags`) are
  dropped and djbench's loopback address put in their place; a uWSGI ini is read from
  a copy in the run's folder without its socket lines (uWSGI adds every socket it is
  given, so a command-line one would not replace the file's ``http-socket=:$(PORT)``,
  which listens on every interface);
- a file written for a container (its family's ``container_file``: uWSGI's) is run
  from the project: the image's paths mapped to the project's, daemons, start hooks,
  users and log files left out, each change in ``OwnCommand.changes``;
- uWSGI gets ``--die-on-term``: without it SIGTERM makes uWSGI 2.0 reload, not stop;
- the environment: ``PORT`` is djbench's port (files that read it), ``VIRTUAL_ENV``
  this interpreter's prefix when unset (``virtualenv=$(VIRTUAL_ENV)`` lines);
- the executable: this environment's console script, like djbench's own layouts;
- variables the command reads (``$WEB_CONCURRENCY``) come from runbench's environment;
  one unset and without a default is dropped with its flag (the server's default).
CPU pinning, the readiness probe and the stop are djbench's, as for every deployment.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

from djbench.plan.owncommands import OwnCommand
from djbench.servers.entry import Launch, LaunchConfig, ServerSpec, executable_path, without

_VARIABLE = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)")


def _expanded(word: str) -> str | None:
    """The word with $VAR / ${VAR} / ${VAR:-default} filled in; None when one is unset
    without a default."""
    missing = False

    def fill(match: re.Match[str]) -> str:
        nonlocal missing
        name = match.group(1) or match.group(3)
        value = os.environ.get(name, match.group(2))
        if value is None:
            missing = True
            return ""
        return value

    out = _VARIABLE.sub(fill, word)
    return None if missing else out


def _filled(words: list[str]) -> list[str]:
    """The words with their variables filled in; one unset (and without a default) is
    dropped with the flag it is the value of: the server's default then holds."""
    kept: list[str] = []
    for word in words:
        value = _expanded(word)
        if value is None:
            if kept and kept[-1].startswith("-") and len(kept) > 1:
                kept.pop()
            continue
        kept.append(value)
    return kept


def _ini_copy(
    spec: ServerSpec, own: OwnCommand, project_dir: Path, run_dir: Path
) -> tuple[Path, str]:
    """A copy of the project's ini without its sockets (and uWSGI's %d made the
    original's folder), and the socket kind it used: `http` (uWSGI's router) or else
    `http-socket` (a uwsgi-protocol `socket` for nginx cannot be loaded over HTTP)."""
    assert own.config is not None
    listen = spec.listen
    original = project_dir / own.config
    kind = "http-socket"
    lines: list[str] = []
    section = ""
    for line in original.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.strip("[]").strip()
        key = stripped.split("=", 1)[0].strip() if "=" in stripped else ""
        if section == listen.ini_section and key in listen.ini_keys:
            kind = "http" if key == "http" else "http-socket"
            lines.append(f"; djbench: {stripped} (djbench's loopback address instead)")
            continue
        lines.append(line.replace("%d", f"{original.parent}/"))
    if spec.family.container_file is not None:
        lines = spec.family.container_file(lines, project_dir).lines
    copy = run_dir / "own" / f"{own.name}.ini"
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return copy, kind


def launch(
    spec: ServerSpec, own: OwnCommand, config: LaunchConfig, project_dir: Path, run_dir: Path
) -> Launch:
    """The team's command, listening where djbench says."""
    words = shlex.split(own.command)
    words = [executable_path(words[0]) or words[0], *words[1:]]
    host = f"[{config.host}]" if ":" in config.host else config.host
    fill = {"host": config.host, "port": str(config.port), "bind": f"{host}:{config.port}"}
    fill["kind"] = "http-socket"
    env = {"PORT": str(config.port)}
    if "VIRTUAL_ENV" not in os.environ:
        env["VIRTUAL_ENV"] = sys.prefix
    listen = spec.listen
    words = _filled(without(words, listen.flags))
    if listen.ini_keys and own.config:
        copy, fill["kind"] = _ini_copy(spec, own, project_dir, run_dir)
        words = [str(copy) if w == own.config else w for w in words]
    argv = [*words, *(a.format(**fill) for a in listen.argv)]
    return Launch(argv=argv, env=env, threads=own.threads)
