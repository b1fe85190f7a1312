"""Parsing of runbench's list-valued options into checked values (one-line errors)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

# scheme://user:PASSWORD@host: the password of a URL (DATABASE_URL, REDIS_URL, a cell's
# variables) is never printed, logged or written into a results file.
_URL_PASSWORD = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)([^@\s]+)(@)")


def redact(text: str) -> str:
    """`text` with every URL's password replaced by ***."""
    return _URL_PASSWORD.sub(r"\1***\3", text)


class OptionError(ValueError):
    """Bad option value; the message is the one-line error shown to the user."""


def split_list(raw: str | None) -> list[str]:
    if raw is None:
        return []
    return [part.strip() for part in raw.split(",") if part.strip()]


def choose(option: str, raw: str | None, valid: Iterable[str]) -> list[str]:
    """Names from a comma-separated option, each one of `valid` (empty: none given)."""
    valid = list(valid)
    names = split_list(raw)
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise OptionError(
            f"unknown {option} {', '.join(repr(u) for u in unknown)}; valid: {', '.join(valid)}"
        )
    return list(dict.fromkeys(names))


def positive_ints(option: str, raw: str) -> list[int]:
    try:
        values = [int(v) for v in split_list(raw)]
    except ValueError:
        raise OptionError(f"{option} takes comma-separated whole numbers, got {raw!r}") from None
    if not values or any(v < 1 for v in values):
        raise OptionError(f"{option} takes whole numbers of at least 1, got {raw!r}")
    return values


def cpu_split(
    raw: str, available: list[int] | None = None
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(server CPUs, driver CPUs) from --cpus: 'auto', 'none' or 'S/D' like '0/1' or '0,1/2-3'.

    auto: with two or more CPUs the server gets the first half and the load driver the
    rest; with one CPU nothing is pinned.
    """
    cpus = sorted(available if available is not None else os.sched_getaffinity(0))
    if raw == "none":
        return (), ()
    if raw == "auto":
        if len(cpus) < 2:
            return (), ()
        half = len(cpus) // 2
        return tuple(cpus[:half]), tuple(cpus[half:])
    server_raw, sep, driver_raw = raw.partition("/")
    if not sep:
        raise OptionError(f"--cpus takes auto, none or SERVER/DRIVER like 0/1, got {raw!r}")
    server, driver = _cpu_set(server_raw, raw), _cpu_set(driver_raw, raw)
    outside = sorted((set(server) | set(driver)) - set(cpus))
    if outside:
        raise OptionError(f"--cpus names CPU(s) {outside} not available here; available: {cpus}")
    if set(server) & set(driver):
        raise OptionError(f"--cpus gives CPU(s) {sorted(set(server) & set(driver))} to both sides")
    return server, driver


def cpu_count(pinned: tuple[int, ...] | list[int]) -> int:
    """The CPUs a server has: those it is pinned to, else every CPU this process may use
    (unpinned, a server is not limited to one)."""
    return len(pinned) or len(os.sched_getaffinity(0)) or 1


def _cpu_set(part: str, raw: str) -> tuple[int, ...]:
    found: list[int] = []
    try:
        for piece in split_list(part):
            low, _, high = piece.partition("-")
            found += range(int(low), int(high or low) + 1)
    except ValueError:
        raise OptionError(f"--cpus: cannot read {raw!r} (use e.g. 0/1 or 0-1/2-3)") from None
    if not found:
        raise OptionError(f"--cpus: each side needs at least one CPU, got {raw!r}")
    return tuple(sorted(set(found)))
