"""A version matrix's cells built: a git worktree per `ref`, one isolated environment
per cell (uv), the project and djbench installed in it, what failed to build said."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from djbench.launch import envs
from djbench.measure.drivers import DRIVERS
from djbench.plan import matrix_axes as plan
from djbench.plan.options import OptionError
from djbench.plan.project import Project
from djbench.plan.runplan import RunOptions
from djbench.results.model import MatrixCell
from djbench.servers import SERVERS, caddy
from djbench.verdicts import rules


@dataclass
class Settings:
    axes: dict[str, list[str]]
    base: str | None
    python: str | None
    offline: bool
    threshold: float = rules.THRESHOLD
    alpha: float = rules.ALPHA
    budget_s: float = 3600.0  # the whole command's wall time
    # No --budget: the horizon is the rounds rules.PLANNED_CHANGE needs (80% power at the
    # planning noise), within budget_s; else the rounds the budget buys.
    sized_by_power: bool = False
    rounds: int | None = None  # --trials: exactly this many rounds, one look; else until decided
    servers: list[str] = field(default_factory=list)  # each a unit run back to back per cell
    # The cost phase before the rounds (djbench.run.matrix_cost): "first" (when Valgrind
    # is installed), "only" (--cost-only: no rounds) or "skip" (--no-cost).
    cost: Literal["first", "only", "skip"] = "first"
    cost_threshold: float = 0.01
    cost_seeds: int = 3
    # How a round puts the cells side by side (djbench.run.matrix_rounds): their windows
    # taking turns, seconds apart, or each cell's part back to back.
    pairing: Literal["alternate", "sequential"] = "alternate"


@dataclass
class CellState:
    cell: plan.Cell
    record: MatrixCell
    python: str | None = None  # the environment's interpreter, once built
    project_dir: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    worktree: Path | None = None  # a ref cell's checkout, removed when the matrix ends
    turns: bool | None = None  # its djbench takes turns (run/turns.py); None: not asked yet


def djbench_source() -> tuple[str, Path | None]:
    """How a cell installs djbench: from the checkout this one runs from (the folder
    above the package holds djbench's pyproject.toml), else the same release from PyPI."""
    import djbench
    from djbench import __version__

    root = Path(djbench.__file__).resolve().parent.parent
    pyproject = root / "pyproject.toml"
    if pyproject.exists() and re.search(
        r'^name\s*=\s*"djbench"', pyproject.read_text(encoding="utf-8"), re.M
    ):
        return str(root), root
    return f"djbench=={__version__}", None


def extras(opts: RunOptions) -> list[str]:
    names = opts.servers or list(SERVERS)
    found = [SERVERS[n].extra for n in names if n in SERVERS]
    if any(p != caddy.NONE for p in opts.proxies):
        found.append(caddy.EXTRA)
    driver = DRIVERS.get(opts.driver)
    if driver is not None and driver.extra is not None:
        found.append(driver.extra)
    return sorted(set(found))


def inputs(project: Project, project_dir: Path, source: Path | None, opts: RunOptions) -> list[str]:
    """A cell's requirement lines before its pins: djbench (with the selected servers'
    extras and any the project asks as "djbench[...]") and the project's own. `source`
    is where djbench comes from (a folder; in a ref cell, the worktree's copy)."""
    from djbench import __version__

    wanted = set(extras(opts))
    lines = []
    for line in project.requirements:
        own = re.fullmatch(r"djbench\[(.*)\]", line.strip())
        if own:
            wanted |= {e.strip() for e in own[1].split(",") if e.strip()}
        else:
            # A file of the project's, read in the cell's copy of the project.
            lines.append(line.replace(str(project.directory), str(project_dir)))
    extra = f"[{','.join(sorted(wanted))}]" if wanted else ""
    first = f"-e {source}{extra}" if source is not None else f"djbench{extra}=={__version__}"
    return [first, *lines]


def build_cells(
    project: Project,
    opts: RunOptions,
    settings: Settings,
    say: Callable[[str], None],
    out: Path,
) -> list[CellState]:
    """Resolve and build every cell's environment; failures are recorded, not raised."""
    cells = plan.cells(settings.axes)
    _, source = djbench_source()
    top: Path | None = None
    if "ref" in settings.axes:
        try:
            top = Path(envs.git(project.directory, "rev-parse", "--show-toplevel")).resolve()
        except envs.EnvError as exc:
            raise OptionError(f"--matrix ref=...: {exc}") from None
    states = [
        CellState(cell=c, record=MatrixCell(label=c.label, axes=dict(c.values))) for c in cells
    ]
    for state in states:
        ref = state.cell.get("ref")
        state.project_dir = project.directory
        cell_source = source
        if ref is not None and top is not None:
            try:
                state.project_dir, sha, tree = envs.worktree(project.directory, ref)
                state.worktree = tree
            except envs.EnvError as exc:
                state.record.status, state.record.reason = "failed", str(exc)
                continue
            state.record.ref, state.record.commit = ref, sha
            if source is not None and source.resolve().is_relative_to(top):
                cell_source = tree / source.resolve().relative_to(top)  # djbench at that ref
        state.record.project_dir = str(state.project_dir)
        cell_dir = (out / "cells" / state.cell.slug).resolve()
        state.env = {k: v.format(cell_dir=cell_dir) for k, v in project.matrix_cell_env}
        state.record.requirements = inputs(project, state.project_dir, cell_source, opts)
        state.record.overrides = state.cell.requirements()
    found = envs.interpreters(settings.python)
    if not found:
        for s in states:
            s.record.status, s.record.reason = "failed", "no Python 3 interpreter found"
        return states
    compiled = _resolve_all(states, found, settings, say, out)
    for state in states:
        if state.record.status != "ok" or state.cell.slug not in compiled:
            continue
        text, interpreter = compiled[state.cell.slug]
        say(f"{state.cell.label}: building its environment (Python {interpreter.full})")
        try:
            built = envs.build(text, interpreter, settings.offline)
        except envs.EnvError as exc:
            state.record.status, state.record.reason = "failed", str(exc)
            continue
        state.python = built.python
        state.record.python = interpreter.path
        state.record.python_version = interpreter.full
        state.record.environment = str(built.directory)
        state.record.resolved_sha256 = built.sha256
        state.record.versions = built.versions
        state.record.build_seconds = round(built.seconds, 2)
        state.record.cached = built.cached
        say(
            f"{state.cell.label}: {'cached' if built.cached else 'built'} in "
            f"{built.seconds:.1f} s; Django {built.versions.get('django', '?')}"
        )
    return states


def _resolve_all(
    states: list[CellState],
    found: list[envs.Interpreter],
    settings: Settings,
    say: Callable[[str], None],
    out: Path,
) -> dict[str, tuple[str, envs.Interpreter]]:
    """Each cell's resolution. Without a python axis, one interpreter for every cell
    if one fits them all; else each cell its first fit (a warning says so)."""
    work = out / "cells"
    live = [s for s in states if s.record.status == "ok"]
    tried: dict[tuple[str, str], str | envs.EnvError] = {}

    def attempt(state: CellState, interp: envs.Interpreter) -> str | envs.EnvError:
        key = (state.cell.slug, interp.path)
        if key not in tried:
            try:
                tried[key] = envs.resolve(
                    state.record.requirements,
                    state.record.overrides,
                    interp,
                    work / state.cell.slug,
                    settings.offline,
                )
            except envs.EnvError as exc:
                tried[key] = exc
        return tried[key]

    result: dict[str, tuple[str, envs.Interpreter]] = {}
    if "python" not in settings.axes:
        for interp in found:
            answers = [attempt(s, interp) for s in live]
            if all(isinstance(a, str) for a in answers):
                say(f"every cell resolves on Python {interp.full} ({interp.path}): used for all")
                return {s.cell.slug: (str(a), interp) for s, a in zip(live, answers, strict=True)}
        # A cell that resolves on no interpreter must not decide the others' Python:
        # one interpreter for every cell that can be built, when one fits them all.
        buildable = [s for s in live if any(isinstance(attempt(s, i), str) for i in found)]
        for interp in found:
            if buildable and all(isinstance(attempt(s, interp), str) for s in buildable):
                say(
                    f"every buildable cell resolves on Python {interp.full} ({interp.path}): "
                    "used for all of them"
                )
                result = {s.cell.slug: (str(attempt(s, interp)), interp) for s in buildable}
                for state in live:
                    if state not in buildable:
                        _unbuildable(state, attempt(state, found[0]), found)
                return result
    for state in live:
        wanted = state.cell.get("python")
        pool = [i for i in found if wanted is None or i.short == wanted]
        if not pool:
            have = ", ".join(sorted({i.short for i in found}))
            state.record.status = "failed"
            state.record.reason = (
                f"no Python {wanted} on this machine (found {have}); install it or name one "
                "with --python"
            )
            continue
        first: envs.EnvError | None = None
        for interp in pool:
            answer = attempt(state, interp)
            if isinstance(answer, str):
                result[state.cell.slug] = (answer, interp)
                break
            first = first or answer
        else:
            _unbuildable(state, first, pool)
    pythons = {interp.short for _, interp in result.values()}
    if "python" not in settings.axes and len(pythons) > 1:
        say(
            "warning: no interpreter fits every cell; the cells run on Python "
            + ", ".join(sorted(pythons))
            + ": their comparison mixes the Python version with the axis"
        )
    return result


def _unbuildable(
    state: CellState, error: str | envs.EnvError | None, found: list[envs.Interpreter]
) -> None:
    """The cell resolves on none of the interpreters: failed, with uv's reason."""
    tried_on = ", ".join(i.full for i in found)
    state.record.status = "failed"
    state.record.reason = f"{error} (tried Python {tried_on})"


def run_in_cell(
    state: CellState, argv: list[str], env: dict[str, str], log: Path, timeout: float
) -> int | None:
    """A command (a cell's runbench) in the cell's checkout, its output to `log`; its exit
    code, or None when it was killed at `timeout`."""
    with log.open("w") as handle:
        try:
            done = subprocess.run(
                argv,
                cwd=state.project_dir,
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return None
    return done.returncode


def remove_worktrees(states: list[CellState]) -> None:
    for state in states:
        if state.worktree is not None:
            envs.remove_worktree(state.worktree)
