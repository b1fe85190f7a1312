"""A scenario file's first validation error as one sentence that names the scenario and
the key ("scenario #3 ('movies-sync'): expect.status: must be ...")."""

from __future__ import annotations

from typing import Any


def where(loc: tuple[int | str, ...], raw: dict[str, Any]) -> str:
    """'scenario #3 (movies-sync): expect.status' from pydantic's error location."""
    parts = list(loc)
    if len(parts) >= 2 and parts[0] == "scenario" and isinstance(parts[1], int):
        items = raw.get("scenario") or []
        index = parts[1]
        name = items[index].get("name") if isinstance(items[index], dict) else None
        head = f"scenario #{index + 1}" + (f" ({name!r})" if isinstance(name, str) else "")
        rest = parts[2:]
    else:
        head, rest = "", parts
    path = ""
    for part in rest:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return ": ".join(x for x in (head, path.replace("json_", "json")) if x) or "top level"


def problem(error: Any, raw: dict[str, Any]) -> str:
    kind, message, loc = error["type"], error["msg"], tuple(error["loc"])
    got = error.get("input")
    if kind == "extra_forbidden":
        message = "unknown key (a typo?)"
    elif kind == "missing":
        message = "required key is missing"
    elif kind == "literal_error":
        message = message.replace("Input should be", "must be") + f", got {got!r}"
    elif kind == "string_pattern_mismatch":
        message = f"must start with '/', got {got!r}"
    elif loc == ("scenario",) and kind == "list_type":
        message = "must be a list of tables: write [[scenario]], not [scenario]"
    else:
        message = message.replace("Input should be", "must be") + f", got {got!r}"
    return f"{where(loc, raw)}: {message}"
