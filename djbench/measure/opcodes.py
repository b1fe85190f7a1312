"""Where a page's work goes, by Python function: the bytecode instructions each
function executes per request, counted with ``sys.settrace`` and ``f_trace_opcodes``.

Callgrind's own functions are C functions of the interpreter (Python 3.11 has no perf
trampoline: every Python function is ``_PyEval_EvalFrameDefault``), so a cost probe
attributes a change with this second, deterministic count instead: it runs outside
Valgrind, after the counted requests, and is exclusive (a function's own opcodes, not
its callees'). Hand-written: cProfile and yappi count calls and time, not opcodes.
Only the main thread is traced (ASGI's worker threads are not: said with the figures).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any


def short(filename: str) -> str:
    """A file's name as both sides of a comparison spell it (cells live in different
    environments and worktrees): from its package, or relative to the project."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    if "/lib/python3" in filename:
        return "<stdlib>/" + filename.split("/lib/python3", 1)[1].split("/", 1)[-1]
    here = f"{Path.cwd()}/"
    return filename[len(here) :] if filename.startswith(here) else filename


def _name(frame: FrameType) -> str:
    code = frame.f_code
    return f"{short(code.co_filename)}:{code.co_qualname}"


@contextmanager
def counting() -> Iterator[Counter[str]]:
    counts: Counter[str] = Counter()

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call":
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
            return trace
        if event == "opcode":
            counts[_name(frame)] += 1
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        yield counts
    finally:
        sys.settrace(previous)


KEPT = 0.0005  # a function is kept when it runs at least this share of the opcodes


def per_request(counts: Counter[str], requests: int) -> dict[str, float]:
    """Each function's opcodes per request, those over KEPT of the whole (the smaller
    ones cannot explain a change a gate would see)."""
    total = sum(counts.values()) or 1
    return {name: n / requests for name, n in counts.items() if n / total >= KEPT}
