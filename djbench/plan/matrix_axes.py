"""The version matrix (--matrix): axes of requirements, Python versions and git refs.

    --matrix "django=5.2,6.0"                     two cells
    --matrix "django=5.2,6.0;psycopg=3.2,3.3"     four cells (every combination)
    --matrix "python=3.11,3.12"                   one interpreter per cell
    --matrix "ref=main,HEAD"                      the project at two commits

A requirement's version "5.2" means the highest patch release of 5.2 (``>=5.2,<5.3``);
"5.2.3" means exactly that release; a value starting with an operator (``>=5.1,<6``
is not possible inside a comma list, so ``~=5.1``, ``==5.2.1``, ``>=5.1``) is taken
as written. Parsing only: environments are built by :mod:`djbench.launch.envs`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from djbench.plan.options import OptionError, split_list

MAX_CELLS = 8  # every matrix is bounded: each cell is a full environment and run
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_VERSION = re.compile(r"^\d+(\.\d+){0,2}$")
SPECIAL = ("python", "ref")


@dataclass(frozen=True)
class Cell:
    """One combination of the axes' values, in axis order."""

    values: tuple[tuple[str, str], ...]

    @property
    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.values)

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.=-]+", "-", self.label.replace(",", "_")).strip("-")

    def get(self, axis: str) -> str | None:
        return dict(self.values).get(axis)

    def requirements(self) -> list[str]:
        """The pins of this cell's requirement axes (python and ref are not packages)."""
        return [pin(k, v) for k, v in self.values if k not in SPECIAL]


def pin(name: str, value: str) -> str:
    """'django', '5.2' -> 'django>=5.2,<5.3' (the highest patch release of 5.2)."""
    if value[0] in "<>=!~":
        return f"{name}{value}"
    parts = value.split(".")
    if len(parts) >= 3:
        return f"{name}=={value}"
    if len(parts) == 2:
        return f"{name}>={value},<{parts[0]}.{int(parts[1]) + 1}"
    return f"{name}>={value},<{int(parts[0]) + 1}"


def parse(raw: str) -> dict[str, list[str]]:
    """'django=5.2,6.0;python=3.12' -> {'django': ['5.2', '6.0'], 'python': ['3.12']}."""
    axes: dict[str, list[str]] = {}
    for part in raw.split(";"):
        if not part.strip():
            continue
        name, sep, values = part.partition("=")
        name = name.strip().lower()
        if not sep or not _NAME.match(name):
            raise OptionError(
                '--matrix takes AXIS=V1,V2[;AXIS2=...] (e.g. "django=5.2,6.0"), '
                f"got {part.strip()!r}"
            )
        if name in axes:
            raise OptionError(f"--matrix names {name} twice")
        found = list(dict.fromkeys(split_list(values)))
        if not found:
            raise OptionError(f"--matrix {name}: give at least one value")
        for value in found:
            if name == "python" and not re.match(r"^\d+\.\d+$", value):
                raise OptionError(f"--matrix python takes versions like 3.12, got {value!r}")
            if name not in SPECIAL and not (_VERSION.match(value) or value[0] in "<>=!~"):
                raise OptionError(
                    f"--matrix {name}: {value!r} is not a version (like 5.2 or 5.2.3) "
                    "or a specifier (like ~=5.2)"
                )
        axes[name] = found
    if not axes:
        raise OptionError('--matrix: give at least one axis, e.g. "django=5.2,6.0"')
    count = 1
    for found_values in axes.values():
        count *= len(found_values)
    if count < 2:
        raise OptionError("--matrix needs at least two cells to compare (two values on an axis)")
    if count > MAX_CELLS:
        raise OptionError(f"--matrix makes {count} cells; at most {MAX_CELLS} per run")
    return axes


def cells(axes: dict[str, list[str]]) -> list[Cell]:
    names = list(axes)
    return [
        Cell(tuple(zip(names, combo, strict=True)))
        for combo in itertools.product(*(axes[n] for n in names))
    ]


def base_cell(found: list[Cell], raw: str | None) -> Cell:
    """The cell every other is compared with: --matrix-base (a label) or the first."""
    if raw is None:
        return found[0]
    for cell in found:
        if raw in (cell.label, *[v for _, v in cell.values]) and (
            len(cell.values) == 1 or raw == cell.label
        ):
            return cell
    raise OptionError(
        f"--matrix-base {raw!r} is not a cell; valid: {', '.join(c.label for c in found)}"
    )
