"""The house's shape (issue 53): the import layers and their contracts, no two modules
that import each other (even through others), and a verdicts layer that returns typed
values and codes, never sentences (presenters say them)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import subprocess
import sys
import typing
from pathlib import Path
from types import ModuleType

import grimp

import djbench.verdicts

ROOT = Path(__file__).resolve().parent.parent

# A verdict may hold or return a string only under a name that says it is a name, a
# label or a code (a code of a closed set is typed as a Literal, never a str), or data
# read from a results file as it was recorded (an exception's message, a shape).
NAMES = {
    "label", "labels", "server", "scenario", "scenarios", "proxy", "protocol", "front",
    "variant", "key", "method", "step", "value", "axis", "interface", "base", "new",
    "leader", "other", "cell", "failed_cells", "base_failed", "metric", "kind", "status",
    "run_id", "tag", "run_tag", "page", "name", "shapes", "efficient", "decision",
    "exceptions", "question",
    "sql_added", "sql_removed",  # SQL statements' shapes: data, not words
}  # fmt: skip


def test_the_import_contracts_hold() -> None:
    linter = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(linter), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert " 0 broken" in done.stdout and " kept" in done.stdout


def test_no_two_modules_import_each_other() -> None:
    graph = grimp.build_graph("djbench", cache_dir=None)
    circles = []
    for module in sorted(graph.modules):
        for other in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=other, imported=module):
                circles.append(f"{module} -> {other} -> ... -> {module}")
    assert not circles, "\n".join(circles)


def _modules(package: ModuleType) -> list[ModuleType]:
    found = [package]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        found.append(importlib.import_module(info.name))
    return found


def _has_str(hint: object) -> bool:
    """Whether a value of this type can hold a str (a dict's keys are names: only its
    values count; a Literal's strings are codes)."""
    if hint is str:
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return False
    if origin is dict:
        return _has_str(args[1])
    return any(_has_str(arg) for arg in args)


def _public(module: ModuleType) -> list[tuple[str, object]]:
    """Every public function and public class defined in `module`, by its dotted name."""
    found = []
    for name, value in vars(module).items():
        if name.startswith("_") or getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(value) or inspect.isclass(value):
            found.append((f"{module.__name__}.{name}", value))
    return found


def test_verdict_modules_return_codes_never_sentences() -> None:
    sentences = []
    for module in _modules(djbench.verdicts):
        for name, value in _public(module):
            callables = [(name, value)] if inspect.isfunction(value) else []
            if inspect.isclass(value):
                callables += [
                    (f"{name}.{attr}", getattr(value, attr))
                    for attr in vars(value)
                    if not attr.startswith("_") and inspect.isfunction(getattr(value, attr))
                ]
                callables += [
                    (f"{name}.{attr}", prop.fget)
                    for attr, prop in vars(value).items()
                    if isinstance(prop, property) and prop.fget is not None
                ]
                if dataclasses.is_dataclass(value):
                    hints = typing.get_type_hints(value)
                    sentences += [
                        f"{name}.{f.name}: a str field"
                        for f in dataclasses.fields(value)
                        if _has_str(hints[f.name]) and f.name not in NAMES
                    ]
            for qualified, function in callables:
                hints = typing.get_type_hints(function)
                if _has_str(hints.get("return")) and qualified.rsplit(".", 1)[1] not in NAMES:
                    sentences.append(f"{qualified} returns a str")
    assert not sentences, "verdicts return codes (Notice) and typed values:\n" + "\n".join(
        sentences
    )
