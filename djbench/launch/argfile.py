"""Read a deploy/*.args file: command-line flags, one or more per line, `#` comments;
and drop flags from a command line."""

from __future__ import annotations

import shlex
from pathlib import Path


def read_args(path: Path) -> list[str]:
    args: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        args.extend(shlex.split(line, comments=True))
    return args


def without(argv: list[str], flags: tuple[str, ...]) -> list[str]:
    """argv without the given flags and their values (`--flag value` or `--flag=value`)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in flags:
            skip = "=" not in arg
            continue
        kept.append(arg)
    return kept
