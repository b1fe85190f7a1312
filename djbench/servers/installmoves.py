"""What installing djbench's server extras moved in the project's environment (issue 54
item 9).

A server's dependencies can cap a package the project pins: Daphne needs Twisted,
Twisted's TLS extra pyOpenSSL, and pyOpenSSL caps ``cryptography``; installing
``djbench[servers]`` into a project that pinned cryptography 51.0.1 moved it back to
50.0.2, and nothing said so. Here the project's pins (``requirements*.txt``,
``uv.lock``, ``poetry.lock``, ``Pipfile.lock``) are held against what is installed; a
package installed at another version than its pin is said when an installed
distribution's requirement excludes the pinned version and that distribution is reached
from a server's packages (the server and the extra to leave out named). A security
library moved back (SECURITY) is a warning of its own.

Reading installed metadata and requirement specifiers is the ``packaging`` library's
(importlib.metadata for the distributions); the graph walk is written here.
"""

from __future__ import annotations

import contextlib
import json
import re
import tomllib
from collections import deque
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from djbench.servers import FAMILIES

# Libraries whose older versions carry published vulnerabilities: moved back, a warning.
SECURITY = frozenset(
    ("cryptography", "pyopenssl", "certifi", "urllib3", "requests", "django", "idna",
     "jinja2", "pyjwt", "paramiko", "twisted", "h11", "setuptools", "pillow")
)  # fmt: skip
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;#\\]+)")


@dataclass(frozen=True)
class Moved:
    """A pinned package installed at another version, and the server that moved it."""

    package: str
    pinned: str
    installed: str
    pinned_in: str  # the project's file that pins it
    required_by: str  # "pyopenssl (cryptography<51)"
    server_package: str  # the server's package it is reached from ("daphne")
    extra: str  # djbench's extra that installs that server ("daphne")

    @property
    def downgrade(self) -> bool:
        with contextlib.suppress(InvalidVersion):
            return Version(self.installed) < Version(self.pinned)
        return False

    @property
    def security(self) -> bool:
        return self.package in SECURITY and self.downgrade


def pins(root: Path) -> dict[str, tuple[str, str]]:
    """Package -> (pinned version, the file), from the project's requirement and lock
    files (the first file to pin a package wins)."""
    found: dict[str, tuple[str, str]] = {}

    def add(name: str, version: str, where: Path) -> None:
        found.setdefault(canonicalize_name(name), (version, str(where.relative_to(root))))

    for path in sorted(root.glob("requirements*.txt")) + sorted(root.glob("requirements/*.txt")):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            for line in path.read_text(encoding="utf-8").splitlines():
                if match := _PIN.match(line):
                    add(match.group(1), match.group(2), path)
    for name in ("uv.lock", "poetry.lock"):
        with contextlib.suppress(OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            for package in tomllib.loads((root / name).read_text(encoding="utf-8")).get(
                "package", []
            ):
                if "name" in package and "version" in package:
                    add(package["name"], str(package["version"]), root / name)
    with contextlib.suppress(OSError, ValueError):
        lock = json.loads((root / "Pipfile.lock").read_text(encoding="utf-8"))
        for name, entry in (lock.get("default") or {}).items():
            version = str(entry.get("version", "")).lstrip("=")
            if version:
                add(name, version, root / "Pipfile.lock")
    return found


def _requirements() -> dict[str, list[Requirement]]:  # names canonical
    """Installed distribution -> its requirements (extras' too: a server's extra such as
    uvicorn[standard] or twisted[tls] is how they came in)."""
    found: dict[str, list[Requirement]] = {}
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"] or "")
        reqs = []
        for raw in dist.requires or []:
            with contextlib.suppress(InvalidRequirement):
                reqs.append(Requirement(raw))
        found[name] = reqs
    return found


def _applies(req: Requirement, extras: frozenset[str]) -> bool:
    """Whether a requirement holds here for a distribution installed with `extras`."""
    if req.marker is None:
        return True
    return any(req.marker.evaluate({"extra": e}) for e in (*extras, ""))


def _reached_from(start: str, graph: dict[str, list[Requirement]]) -> set[str]:
    """The distributions `start` needs, with the extras each is asked with
    (daphne -> twisted[tls] -> pyopenssl; not Gunicorn's optional eventlet)."""
    seen: set[tuple[str, frozenset[str]]] = {(start, frozenset())}
    queue = deque(seen)
    while queue:
        name, extras = queue.popleft()
        for req in graph.get(name, []):
            item = (canonicalize_name(req.name), frozenset(req.extras))
            if item[0] in graph and item not in seen and _applies(req, extras):
                seen.add(item)
                queue.append(item)
    return {name for name, _ in seen}


def moved(root: Path) -> list[Moved]:
    """Every pin of the project that a server's dependencies moved."""
    pinned_here = pins(root)
    if not pinned_here:
        return []
    graph = _requirements()
    versions: dict[str, str] = {
        canonicalize_name(d.metadata["Name"] or ""): d.version for d in metadata.distributions()
    }
    servers = {canonicalize_name(p): f.extra for f in FAMILIES for p in f.packages}
    reach = {p: _reached_from(p, graph) for p in servers if p in graph}
    found = []
    for name, (pinned, where) in pinned_here.items():
        installed = versions.get(name)
        if installed is None or installed == pinned:
            continue
        for requirer, reqs in graph.items():
            req = next((r for r in reqs if canonicalize_name(r.name) == name), None)
            if req is None or not req.specifier or req.specifier.contains(pinned, True):
                continue
            server = next((p for p, seen in reach.items() if requirer in seen), None)
            if server is not None:
                found.append(
                    Moved(name, pinned, installed, where, f"{requirer} ({name}{req.specifier})",
                          server, servers[server])
                )  # fmt: skip
                break
    return found
