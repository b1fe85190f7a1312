"""Results files: one versioned JSON document per run, written atomically.

The file is rewritten after every trial (write to a temporary file, fsync, rename), so
an interrupted run loses at most the trial in progress. Reports, comparisons and the
guide read only these files.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
STATUSES = ("ok", "incompatible", "failed", "invalid")


class ResultsError(ValueError):
    """A file that is not a usable djbench results file (one readable sentence)."""


def write_atomic(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(document, f, indent=2, sort_keys=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{path} does not exist") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ResultsError(f"{path} is not a djbench results file (not JSON)") from None
    if not isinstance(document, dict) or "schema_version" not in document:
        raise ResultsError(f"{path} is not a djbench results file (no schema_version)")
    version = document["schema_version"]
    if version != SCHEMA_VERSION:
        raise ResultsError(
            f"{path} has schema version {version!r}; this djbench reads version {SCHEMA_VERSION}"
        )
    if not isinstance(document.get("results"), list):
        raise ResultsError(f"{path} has no results list")
    return document
