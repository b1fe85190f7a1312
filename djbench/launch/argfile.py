"""Read a deploy/*.args file: command-line flags, one or more per line, `#` comments."""

from __future__ import annotations

import shlex
from pathlib import Path


def read_args(path: Path) -> list[str]:
    args: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        args.extend(shlex.split(line, comments=True))
    return args
