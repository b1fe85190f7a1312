"""Results files on disk: written atomically from the model, read back through it.

The file is rewritten after every trial (write to a temporary file, fsync, rename), so
an interrupted run loses at most the trial in progress. Reports, comparisons and the
guide read only these files, and only through :func:`load`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from djbench.results import migrate
from djbench.results.model import SCHEMA_VERSION, MatrixDocument, RunDocument

READABLE_VERSIONS = (1, 2, SCHEMA_VERSION)
M = TypeVar("M", RunDocument, MatrixDocument)


def now() -> str:
    """The time a document records (UTC, to the second)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class ResultsError(ValueError):
    """A file that is not a usable djbench results file (one readable sentence)."""


def dump(document: RunDocument | MatrixDocument) -> str:
    return document.model_dump_json(indent=2) + "\n"


def write_atomic(path: Path, document: RunDocument | MatrixDocument) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    ignore_in_git(path.parent)
    text = dump(document)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        # mkstemp makes the file private (0600); a results file is as readable as any
        # other file the user writes.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


GITIGNORE = "# Written by djbench: results, logs and reports are not the project's sources.\n*\n"


def ignore_in_git(folder: Path) -> None:
    """A .gitignore that keeps the results folder out of the project's git status (as
    pytest does for .pytest_cache); one the user wrote is kept."""
    path = folder / ".gitignore"
    if not path.exists():
        path.write_text(GITIGNORE, encoding="utf-8")


MIN_FREE_MB = 50  # a run's results and logs take a few MB; less room than this is refused


def unwritable(folder: Path, min_free_mb: int = MIN_FREE_MB) -> str | None:
    """Why results cannot be written in `folder` (one sentence), or None.

    Checked before anything starts, so that a run never measures for minutes and then
    loses its figures: the folder is created, a file is written and removed in it, and
    the free space on its file system is at least `min_free_mb`. Nothing is left in
    it: the .gitignore comes with the first results file (:func:`write_atomic`).
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".djbench-probe-", dir=folder)
        os.close(fd)
        Path(probe).unlink()
        free = shutil.disk_usage(folder).free / 2**20
    except OSError as exc:
        return f"cannot write results in {folder}: {exc.strerror or exc}"
    if free < min_free_mb:
        return (
            f"only {free:.0f} MB free where the results go ({folder}); "
            f"runbench needs at least {min_free_mb} MB"
        )
    return None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _where(error: dict[str, Any]) -> str:
    return ".".join(str(part) for part in error.get("loc", ())) or "(top level)"


def parse(data: Any, source: str, kind: str | None = None) -> RunDocument:
    """A document from decoded JSON of any readable schema version (of `kind` if given)."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ResultsError(f"{source} is not a djbench results file (no schema_version)")
    version = data["schema_version"]
    if version not in READABLE_VERSIONS:
        raise ResultsError(
            f"{source} has schema version {version!r}; this djbench reads versions "
            f"{', '.join(str(v) for v in READABLE_VERSIONS)} (a newer djbench wrote it?)"
        )
    if data.get("kind") == "matrix":
        raise ResultsError(
            f"{source} is a version matrix; its cells' runs are the files it names "
            "(cells[].run_file)"
        )
    if kind is not None and data.get("kind") != kind:
        found = data.get("kind", "unknown")
        raise ResultsError(f"{source} is a {found!r} file, not a {kind} run")
    if version == 1:
        try:
            data = migrate.from_v1({"run_id": Path(source).stem, **data})
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ResultsError(f"{source} is a malformed schema-1 results file") from None
    if data["schema_version"] == 2:
        data = migrate.from_v2(data)
    return _validated(RunDocument, data, f"{source} is not a valid djbench results file")


def _validated(model: type[M], data: Any, what: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ResultsError(
            f"{what}: {_where(dict(first))}: {first['msg']} ({exc.error_count()} problem(s))"
        ) from None


def kind_of(path: Path) -> str | None:
    """A results file's kind ("benchmark", "cost", "matrix", ...), None when unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data.get("kind") if isinstance(data, dict) else None


def load(path: Path, kind: str | None = None) -> RunDocument:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{path} does not exist") from None
    except IsADirectoryError:
        raise ResultsError(f"{path} is a folder, not a results file") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ResultsError(f"{path} is not a djbench results file (not JSON)") from None
    return parse(data, str(path), kind)


def load_matrix(path: Path) -> MatrixDocument:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        raise ResultsError(f"{path} is not a djbench matrix file") from None
    if not isinstance(data, dict) or data.get("kind") != "matrix":
        raise ResultsError(f"{path} is not a djbench matrix file")
    if data.get("schema_version") == 2:
        data = migrate.matrix_from_v2(data)
    return _validated(MatrixDocument, data, f"{path} is not a valid matrix file")


def newest(folder: Path, count: int = 1) -> list[Path]:
    """The newest `count` runs' files in `folder`, oldest first: a run's file is named by
    its start time (UTC), a --matrix's `matrix.json` sits in its own folder; a verify
    gate's files are skipped. ResultsError when there is none."""
    found: list[tuple[str, Path]] = []
    for path in folder.glob("*.json"):
        found.append((path.stem, path))
    for path in folder.glob("*/matrix.json"):
        found.append((path.parent.name, path))
    runs = []
    for _, path in sorted(found):
        if path.name == "matrix.json":
            runs.append(path)
            continue
        if kind_of(path) == "benchmark":
            runs.append(path)
    if not runs:
        raise ResultsError(
            f"no runbench results in {folder}/: run `manage.py runbench` first, or name a "
            "results file"
        )
    return runs[-count:]


RUNS_DIR = "bench-results"  # runbench's --output default: where the read commands look


def given_or_newest(paths: list[Path], folder: Path, count: int) -> list[Path]:
    """The files a read command was given, else the newest `count` runs in `folder`."""
    return paths if paths else newest(folder, count)
