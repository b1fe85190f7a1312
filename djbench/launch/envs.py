"""Isolated environments for the version matrix, built with uv, cached by what they hold.

uv (a PyPI package whose wheel carries the binary) resolves a cell's requirements for a
given interpreter (``uv pip compile``), and the environment is built from exactly that
resolution (``uv venv`` + ``uv pip sync``). The resolution's text (every pinned
version, local sources included) and the interpreter's version are hashed: an
environment with the same hash is reused, so a cached cell costs nothing to "build".
A half-built environment has no ready mark and is rebuilt. ``offline`` makes uv use
only its own cache (no index), for CI machines without a network.

Interpreters are looked for where a machine keeps them: --python, this one, pythonX.Y
on PATH, pyenv's versions. Git refs become worktrees (``git worktree add --detach``),
one per commit, so a pull request is validated like an upgrade.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

READY = ".djbench-ready"
UV_TIMEOUT = 1800  # a build compiling uWSGI from source takes minutes; bounded all the same


class EnvError(Exception):
    """A cell whose environment cannot be made (one sentence)."""


@dataclass(frozen=True)
class Interpreter:
    path: str
    version: tuple[int, int, int]

    @property
    def short(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    @property
    def full(self) -> str:
        return ".".join(str(v) for v in self.version)


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("DJBENCH_CACHE", Path(base) / "djbench"))


def uv_bin() -> str | None:
    try:
        import uv

        return str(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def _version_of(path: str) -> tuple[int, int, int] | None:
    try:
        done = subprocess.run(
            [path, "-c", "import sys; print(*sys.version_info[:3])"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = done.stdout.split()
    if done.returncode != 0 or len(parts) != 3:
        return None
    major, minor, micro = (int(p) for p in parts)
    return major, minor, micro


def interpreters(asked: str | None = None) -> list[Interpreter]:
    """Python 3 interpreters on this machine: --python first, then this one, then PATH's
    python3.X, then pyenv's; each real file once."""
    candidates: list[str] = []
    if asked:
        candidates.append(asked)
    candidates.append(sys.executable)
    for minor in range(8, 20):
        if found := shutil.which(f"python3.{minor}"):
            candidates.append(found)
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        candidates += [str(p / "bin" / "python") for p in sorted(pyenv.iterdir())]
    seen: set[str] = set()
    found_all: list[Interpreter] = []
    for path in candidates:
        real = os.path.realpath(path)
        if real in seen or not Path(real).exists():
            continue
        seen.add(real)
        version = _version_of(path)
        if version is not None and version[0] == 3:
            found_all.append(Interpreter(path, version))
    if not found_all:
        return []
    # Asked and current first; then the nearest newer versions, then older ones.
    head = found_all[: 2 if asked else 1]
    here = head[-1].version
    rest = found_all[len(head) :]
    newer = sorted((i for i in rest if i.version > here), key=lambda i: i.version)
    older = sorted((i for i in rest if i.version <= here), key=lambda i: i.version, reverse=True)
    return [*head, *newer, *older]


def _uv_failure(stderr: str) -> str:
    """uv's explanation, on one line: the part after its arrow, or its last lines."""
    text = stderr.strip()
    if "╰─▶" in text:
        text = text.split("╰─▶", 1)[1]
    text = re.sub(r"\s+", " ", text).strip()
    return text[:400] + ("..." if len(text) > 400 else "")


def _uv(argv: list[str], cwd: Path, offline: bool) -> subprocess.CompletedProcess[str]:
    uv = uv_bin()
    if uv is None:
        raise EnvError("uv is not installed (it comes with djbench): pip install uv")
    full = [uv, *argv, *(["--offline"] if offline else [])]
    try:
        return subprocess.run(
            full, cwd=cwd, capture_output=True, text=True, timeout=UV_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise EnvError(f"uv did not finish within {UV_TIMEOUT} s: {' '.join(argv[:3])}") from None


def resolve(
    inputs: list[str], overrides: list[str], interpreter: Interpreter, work: Path, offline: bool
) -> str:
    """The pinned requirements (uv pip compile's output) for this interpreter."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "requirements.in").write_text("\n".join(inputs) + "\n")
    (work / "overrides.txt").write_text("\n".join(overrides) + "\n")
    done = _uv(
        [
            "pip",
            "compile",
            "requirements.in",
            "--override",
            "overrides.txt",
            "--python",
            interpreter.path,
            "--quiet",
            "--no-header",
            "--no-annotate",
        ],
        work,
        offline,
    )
    if done.returncode != 0:
        raise EnvError(f"cannot resolve on Python {interpreter.full}: {_uv_failure(done.stderr)}")
    return done.stdout


# How an environment is built, in its hash: 2 compiles every module's bytecode at install
# (uv does not by default, and where PYTHONDONTWRITEBYTECODE is set nothing is ever
# cached: measured, Django's set-up under Valgrind went from 4.4 to 0.9 billion
# instructions, a cell's cost probe from 65 to 15 s per page and seed).
BUILD_FORMAT = 2


def digest(compiled: str, interpreter: Interpreter) -> str:
    text = f"python {interpreter.full}\nformat {BUILD_FORMAT}\n{compiled}"
    return hashlib.sha256(text.encode()).hexdigest()


def pinned_versions(compiled: str) -> dict[str, str]:
    found = {}
    for line in compiled.splitlines():
        name, sep, version = line.strip().partition("==")
        if sep and name and not name.startswith(("#", "-")):
            found[name.lower()] = version.split(";")[0].strip()
    return found


@dataclass(frozen=True)
class Built:
    python: str  # the environment's interpreter
    directory: Path
    interpreter: Interpreter
    sha256: str
    cached: bool
    seconds: float
    versions: dict[str, str]


def build(
    compiled: str, interpreter: Interpreter, offline: bool, root: Path | None = None
) -> Built:
    """The environment holding exactly `compiled` (reused when one with its hash exists)."""
    started = time.monotonic()
    sha = digest(compiled, interpreter)
    directory = (root or cache_root()) / "envs" / sha[:16]
    python = directory / "bin" / "python"
    if (directory / READY).exists() and python.exists():
        return Built(
            str(python), directory, interpreter, sha, True, time.monotonic() - started,
            pinned_versions(compiled),
        )  # fmt: skip
    if directory.exists():
        shutil.rmtree(directory)  # a build that did not finish
    directory.parent.mkdir(parents=True, exist_ok=True)
    made = _uv(
        ["venv", "--quiet", "--python", interpreter.path, str(directory)], directory.parent, offline
    )
    if made.returncode != 0:
        raise EnvError(f"uv venv failed: {_uv_failure(made.stderr)}")
    (directory / "requirements.txt").write_text(compiled)
    synced = _uv(
        [
            "pip", "sync", "--quiet", "--compile-bytecode", "--python", str(python),
            "requirements.txt",
        ],
        directory,
        offline,
    )  # fmt: skip
    if synced.returncode != 0:
        raise EnvError(f"installing the resolved requirements failed: {_uv_failure(synced.stderr)}")
    (directory / READY).write_text(sha + "\n")
    return Built(
        str(python), directory, interpreter, sha, False, time.monotonic() - started,
        pinned_versions(compiled),
    )  # fmt: skip


def git(directory: Path, *argv: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(directory), *argv],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except FileNotFoundError:
        raise EnvError(
            "git is not installed here (a ref axis checks commits out with it)"
        ) from None
    except subprocess.TimeoutExpired:
        raise EnvError(f"git {' '.join(argv)} did not finish within 120 s") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["git failed"])[-1]
        raise EnvError(f"git {' '.join(argv)}: {first}")
    return done.stdout.strip()


def remove_worktree(tree: Path) -> None:
    """Unregister and delete a worktree this run added (the user's repository keeps no
    trace of the matrix); a failure leaves it for `git worktree prune`."""
    with contextlib.suppress(EnvError):
        git(tree, "worktree", "remove", "--force", str(tree))


def check_interpreter(path: str) -> Interpreter:
    """--python PATH: a Python 3 interpreter, or an EnvError that says what it is not."""
    found = shutil.which(path) or path
    if not Path(found).exists():
        raise EnvError(f"--python {path}: no such file")
    version = _version_of(found)
    if version is None or version[0] != 3:
        raise EnvError(f"--python {path}: not a Python 3 interpreter (it did not run as one)")
    return Interpreter(found, version)


def worktree(project_dir: Path, ref: str, root: Path | None = None) -> tuple[Path, str, Path]:
    """(the project's directory inside a worktree of `ref`, the commit, the worktree)."""
    top = Path(git(project_dir, "rev-parse", "--show-toplevel"))
    sha = git(top, "rev-parse", "--verify", f"{ref}^{{commit}}")
    tree = (root or cache_root()) / "worktrees" / sha[:16]
    if not (tree / ".git").exists():
        if tree.exists():
            shutil.rmtree(tree)
        tree.parent.mkdir(parents=True, exist_ok=True)
        git(top, "worktree", "add", "--detach", "--force", str(tree), sha)
    return tree / project_dir.resolve().relative_to(top.resolve()), sha, tree
