"""``runbench --matrix``: one plan, run in one isolated environment per cell, interleaved.

1. Cells from the axes (:mod:`djbench.plan.matrix`); a `ref` axis becomes a worktree
   per commit.
2. Each cell's requirements (djbench with the selected servers' extras, the project's
   own, the cell's pins as overrides) are resolved by uv for one interpreter; the same
   interpreter for every cell when one fits them all (so that only the axis differs),
   else the first that fits each, said as a warning. An environment per resolution
   (:mod:`djbench.launch.envs`, cached by hash).
3. Rounds: in each, every cell (in a seeded shuffled order, recorded) runs one round of
   the same runbench plan in its own interpreter (``--until-round``; later rounds
   ``--resume`` the cell's file), so machine drift spreads over every cell alike.
4. Verdicts: each cell against the base with benchcompare's statistics, plus the
   verify gate's answer shapes (a changed shape is a correctness regression).

A cell that cannot be built or run is recorded with its reason; the others go on.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import secrets
import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from djbench.launch import envs
from djbench.launch.servers import SERVERS
from djbench.plan import matrix as plan
from djbench.plan.options import OptionError
from djbench.plan.project import Project
from djbench.plan.runplan import RunOptions, to_argv
from djbench.reports.compare import Comparison, compare
from djbench.results import store
from djbench.results.analysis import load_run
from djbench.results.model import MatrixCell, MatrixDocument, MatrixPair, MatrixVerdict

CELL_TIMEOUT_FLOOR = 600  # seconds a cell's round may take at least, before it is killed


@dataclass
class Settings:
    axes: dict[str, list[str]]
    base: str | None
    python: str | None
    offline: bool
    threshold: float = 0.10
    alpha: float = 0.01


@dataclass
class CellState:
    cell: plan.Cell
    record: MatrixCell
    python: str | None = None  # the environment's interpreter, once built
    project_dir: Path | None = None
    env: dict[str, str] = field(default_factory=dict)


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
    if "caddy" in opts.proxies:
        found.append("caddy")
    if opts.driver == "locust":
        found.append("locust")
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
            tried_on = ", ".join(i.full for i in pool)
            state.record.status = "failed"
            state.record.reason = f"{first} (tried Python {tried_on})"
    pythons = {interp.short for _, interp in result.values()}
    if "python" not in settings.axes and len(pythons) > 1:
        say(
            "warning: no interpreter fits every cell; the cells run on Python "
            + ", ".join(sorted(pythons))
            + ": their comparison mixes the Python version with the axis"
        )
    return result


def cell_timeout(opts: RunOptions) -> float:
    per_round = opts.soak or opts.duration
    return max(CELL_TIMEOUT_FLOOR, 40 * (per_round + opts.warmup + 5) * max(1, len(opts.servers)))


def run_round(
    state: CellState, opts: RunOptions, round_index: int, out: Path, say: Callable[[str], None]
) -> None:
    """One round of the plan in the cell's interpreter (a new file, or its file resumed)."""
    assert state.python is not None and state.project_dir is not None
    cell_out = (out / "cells" / state.cell.slug).resolve()
    existing = sorted(p for p in cell_out.glob("*.json") if p.is_file())
    argv = [state.python, "manage.py", "runbench"]
    if round_index == 0 or not existing:
        argv += [*to_argv(opts), "--until-round", "1"]
    else:
        run_id = existing[-1].stem
        argv += ["--resume", run_id, "--until-round", str(round_index + 1), "--no-setup"]
    argv += ["--output", str(cell_out), "--no-color"]
    state.record.commands.append(shlex.join(argv))
    env = {**os.environ, **state.env}
    env.pop("VIRTUAL_ENV", None)
    log = cell_out / f"round-{round_index + 1}.log"
    cell_out.mkdir(parents=True, exist_ok=True)
    say(f"round {round_index + 1}: {state.cell.label}")
    with log.open("w") as handle:
        try:
            done = subprocess.run(
                argv,
                cwd=state.project_dir,
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                timeout=cell_timeout(opts),
                check=False,
                start_new_session=False,
            )
            code: int | None = done.returncode
        except subprocess.TimeoutExpired:
            code = None
    files = sorted(p for p in cell_out.glob("*.json") if p.is_file())
    if files:
        state.record.run_file = str(files[-1])
    # 0: done; 1: done, some pair failed or was invalid (recorded in its file). Anything
    # else (a refusal, a crash, a timeout) means the round did not run: the cell fails
    # rather than go on with fewer trials than the other cells.
    if code not in (0, 1):
        tail = " ".join(log.read_text(errors="replace").strip().splitlines()[-1:])
        state.record.status = "failed"
        state.record.reason = (
            f"its runbench {'timed out' if code is None else f'exited with {code}'} in round "
            f"{round_index + 1}: {tail} (log: {log})"
        )


def shapes(run_file: str) -> dict[str, str]:
    """The verify gate's answer shape per (server label, scenario) of a cell's run."""
    document = store.load(Path(run_file))
    return {
        f"{e.label} {e.scenario}": e.verify.shape
        for e in document.results
        if e.verify is not None and e.verify.status == "ok"
    }


def _named(result: Comparison, verdict: str) -> list[str]:
    """Pairs with that verdict, each with the metrics that gave it."""
    found = []
    for pair in result.pairs:
        if pair.verdict != verdict:
            continue
        metrics = [
            f"{m.metric} {m.change:+.1%} (p={_p(m.p_adjusted, m.p_value)})"
            for m in pair.metrics
            if m.verdict == verdict
        ]
        found.append(f"{pair.label} {pair.scenario} c{pair.concurrency}: {', '.join(metrics)}")
    return found


def _p(adjusted: float | None, raw: float | None) -> str:
    value = adjusted if adjusted is not None else raw
    return "?" if value is None else f"{value:.3g}"


def verdicts(states: list[CellState], base: CellState, settings: Settings) -> list[MatrixVerdict]:
    found: list[MatrixVerdict] = []
    if base.record.status != "ok" or base.record.run_file is None:
        return found
    base_run = load_run(Path(base.record.run_file))
    base_shapes = shapes(base.record.run_file)
    for state in states:
        if state is base or state.record.status != "ok" or state.record.run_file is None:
            continue
        result = compare(
            base_run,
            load_run(Path(state.record.run_file)),
            threshold=settings.threshold,
            alpha=settings.alpha,
        )
        theirs = shapes(state.record.run_file)
        changed = [
            f"{key}: {base_shapes[key]} -> {theirs[key]}"
            for key in sorted(set(base_shapes) & set(theirs))
            if base_shapes[key] != theirs[key]
        ]

        found.append(
            MatrixVerdict(
                cell=state.record.label,
                base=base.record.label,
                counts=result.counts(),
                pairs=[
                    MatrixPair(
                        label=p.label,
                        scenario=p.scenario,
                        concurrency=p.concurrency,
                        verdict=p.verdict,
                        metrics={
                            m.metric: (
                                f"x{m.ratio:.3f} p={_p(m.p_adjusted, m.p_value)}"
                                if m.ratio is not None
                                else m.note or "-"
                            )
                            for m in p.metrics
                        },
                        reasons=list(p.reasons),
                    )
                    for p in result.pairs
                ],
                worse=_named(result, "worse"),
                better=_named(result, "better"),
                shape_changes=changed,
                plan_differences=result.plan_differences,
            )
        )
    return found


def main(
    project: Project,
    opts: RunOptions,
    settings: Settings,
    say: Callable[[str], None],
    command: list[str],
) -> tuple[MatrixDocument, Path]:
    """Build, run interleaved, judge; the matrix file is rewritten after every step."""
    cells = plan.cells(settings.axes)
    base_cell = plan.base_cell(cells, settings.base)
    out = Path(opts.output)
    matrix_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    out = out / f"matrix-{matrix_id}"
    seed = opts.seed if opts.seed is not None else secrets.randbelow(2**31)
    opts = opts.model_copy(update={"seed": seed})  # every cell shuffles its servers alike
    path = out / "matrix.json"
    document = MatrixDocument(
        matrix_id=matrix_id,
        started=store.now(),
        axes=settings.axes,
        base=base_cell.label,
        seed=seed,
        options=[*command],
        threshold=settings.threshold,
        alpha=settings.alpha,
    )
    out.mkdir(parents=True, exist_ok=True)
    states = build_cells(project, opts, settings, say, out)
    document.cells = [s.record for s in states]
    store.write_atomic(path, document)
    rng = random.Random(seed)
    for round_index in range(opts.trials):
        ready = [s for s in states if s.record.status == "ok"]
        if not ready:
            break
        order = rng.sample(ready, len(ready))
        document.order.append([s.record.label for s in order])
        for state in order:
            started = time.monotonic()
            run_round(state, opts, round_index, out, say)
            took = time.monotonic() - started
            say(f"  {state.cell.label} round {round_index + 1} took {took:.0f} s")
            store.write_atomic(path, document)
    base = next(s for s in states if s.cell == base_cell)
    document.verdicts = verdicts(states, base, settings)
    document.status = "complete"
    document.finished = store.now()
    store.write_atomic(path, document)
    return document, path


def problem(document: MatrixDocument) -> str | None:
    """The one-line reason for exit code 1, or None."""
    worse = sum(len(v.worse) for v in document.verdicts)
    shapes_changed = sum(len(v.shape_changes) for v in document.verdicts)
    failed = [c.label for c in document.cells if c.status != "ok"]
    parts = []
    if worse:
        parts.append(f"{worse} pair(s) got worse")
    if shapes_changed:
        parts.append(f"{shapes_changed} answer(s) changed shape")
    if failed:
        parts.append(f"cell(s) {', '.join(failed)} could not run")
    base = next((c for c in document.cells if c.label == document.base), None)
    if base is not None and base.status != "ok":
        parts.append(f"the base cell {base.label} did not run: nothing was compared")
    return "; ".join(parts) or None


def check_options(opts: RunOptions, raw_base: str | None, axes: dict[str, list[str]]) -> None:
    if opts.soak is not None:
        raise OptionError("--matrix and --soak: run the soak in each environment separately")
    if opts.target is not None:
        raise OptionError("--matrix builds environments to start servers in; --target starts none")
    plan.base_cell(plan.cells(axes), raw_base)  # a bad --matrix-base is one line, now
