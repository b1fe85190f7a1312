"""``runbench --matrix``: one plan, run in one isolated environment per cell, interleaved.

1. Cells from the axes (:mod:`djbench.plan.matrix_axes`); a `ref` axis becomes a worktree
   per commit.
2. Each cell's requirements (djbench with the selected servers' extras, the project's
   own, the cell's pins as overrides) are resolved by uv for one interpreter; the same
   interpreter for every cell when one fits them all (so that only the axis differs),
   else the first that fits each, said as a warning. An environment per resolution
   (:mod:`djbench.launch.envs`, cached by hash).
3. Rounds: in each, server by server (in a seeded shuffled order, recorded), every
   cell runs that server's part of the plan back to back, cells in a random order
   (``--until-round``; later rounds ``--resume`` that cell's file for that server): the
   two sides of a pair are measured seconds apart, not a whole plan apart, so what the
   machine does meanwhile hits both.
4. Verdicts: each cell against the base with the decision engine
   (:mod:`djbench.results.decide`), paired by round, plus the verify gate's answer
   shapes (a changed shape is a correctness regression). Without ``--trials``, rounds
   go on until every pair is decided or ``--budget`` is spent, with alpha spent over
   the looks; with it, exactly that many rounds and one look.

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
from djbench.plan import matrix_axes as plan
from djbench.plan.options import OptionError
from djbench.plan.project import Project
from djbench.plan.runplan import RunOptions
from djbench.reports.compare import Comparison, compare
from djbench.results import decide, store
from djbench.results.analysis import load_cell
from djbench.results.model import MatrixCell, MatrixDocument, MatrixPair, MatrixVerdict
from djbench.run.cli import cell_argv

CELL_TIMEOUT_FLOOR = 600  # seconds a cell's round may take at least, before it is killed
MAX_ROUNDS = 40  # the most rounds a matrix run until decided plans for, whatever the budget
STARTUP_S = 12.0  # a runbench's own start, a server's start and verify gate (planning only)


@dataclass
class Settings:
    axes: dict[str, list[str]]
    base: str | None
    python: str | None
    offline: bool
    threshold: float = decide.THRESHOLD
    alpha: float = decide.ALPHA
    budget_s: float = 900.0  # the whole command's wall time
    rounds: int | None = None  # --trials: exactly this many rounds, one look; else until decided
    servers: list[str] = field(default_factory=list)  # each a unit run back to back per cell


@dataclass
class CellState:
    cell: plan.Cell
    record: MatrixCell
    python: str | None = None  # the environment's interpreter, once built
    project_dir: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    worktree: Path | None = None  # a ref cell's checkout, removed when the matrix ends


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


def cell_timeout(opts: RunOptions) -> float:
    """How long one cell's round may take before it is killed: generous (40x) against
    the plan's size (servers x scenarios x concurrency levels x one window)."""
    per_window = (opts.soak or opts.duration) + opts.warmup + 5
    windows = max(1, len(opts.servers)) * (len(opts.scenarios) or 3) * len(opts.concurrency)
    return max(CELL_TIMEOUT_FLOOR, 40 * per_window * windows)


def run_round(
    state: CellState,
    opts: RunOptions,
    round_index: int,
    out: Path,
    say: Callable[[str], None],
    server: str | None = None,
) -> None:
    """One round of the plan (or of one server's part of it) in the cell's interpreter:
    a new file, or its file resumed."""
    assert state.python is not None and state.project_dir is not None
    cell_out = (out / "cells" / state.cell.slug).resolve()
    if server is not None:
        cell_out, opts = cell_out / server, opts.model_copy(update={"servers": [server]})
    existing = sorted(p for p in cell_out.glob("*.json") if p.is_file())
    argv = [state.python, "manage.py", "runbench"]
    if round_index == 0 or not existing:
        argv += [*cell_argv(opts), "--until-round", "1"]
    else:
        run_id = existing[-1].stem
        argv += ["--resume", run_id, "--until-round", str(round_index + 1), "--no-setup"]
    argv += ["--output", str(cell_out), "--no-color"]
    state.record.commands.append(shlex.join(argv))
    env = {**os.environ, **state.env}
    env.pop("VIRTUAL_ENV", None)
    log = cell_out / f"round-{round_index + 1}.log"
    cell_out.mkdir(parents=True, exist_ok=True)
    say(f"round {round_index + 1}: {state.cell.label}" + (f" {server}" if server else ""))
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
    if files and str(files[-1]) not in state.record.run_files:
        state.record.run_files.append(str(files[-1]))
    state.record.run_file = state.record.run_file or (str(files[-1]) if files else None)
    if (why := round_failure(code, log, bool(files))) is not None:
        state.record.status = "failed"
        state.record.reason = f"its runbench in round {round_index + 1} {why} (log: {log})"


def round_failure(code: int | None, log: Path, saved: bool) -> str | None:
    """Why a cell's round did not run, or None. 0: done; 1: done, some pair failed or
    was invalid (recorded in its file). A refusal, a crash, a timeout, a traceback or no
    results file at all mean the round did not run: the cell fails rather than go on
    with fewer trials than the others (a project that no longer imports under the new
    Django is the likeliest upgrade failure, and it must not pass)."""
    lines = log.read_text(errors="replace").strip().splitlines()
    if code is None:
        return f"timed out: {' '.join(lines[-1:])}"
    crashed = any(line.startswith("Traceback (most recent call last)") for line in lines)
    if code in (0, 1) and saved and not crashed:
        return None
    tail = " | ".join(line.strip() for line in lines[-3:] if line.strip())
    how = f"exited with {code}" if code not in (0, 1) or saved else "saved no results"
    if crashed:
        how += " after a traceback"
    return f"{how}: {tail}"


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
        # The change as NEW/BASE - 1 (p99 +23%: latency rose), whatever the direction.
        metrics = [
            f"{m.metric} {(m.ratio or 1) - 1:+.1%} (p={_p(m.p_adjusted, m.p_value)})"
            for m in pair.metrics
            if m.verdict == verdict
        ]
        found.append(f"{pair.label} {pair.scenario} c{pair.concurrency}: {', '.join(metrics)}")
    return found


def _p(adjusted: float | None, raw: float | None) -> str:
    value = adjusted if adjusted is not None else raw
    return "?" if value is None else f"{value:.3g}"


def cell_run(state: CellState) -> Path | None:
    return Path(state.record.run_files[0]) if state.record.run_files else None


def verdicts(
    states: list[CellState], base: CellState, settings: Settings, level: float | None = None
) -> list[MatrixVerdict]:
    """Each cell against the base, paired by round, at this look's `level`."""
    found: list[MatrixVerdict] = []
    if base.record.status != "ok" or not base.record.run_files:
        return found
    base_run = load_cell([Path(f) for f in base.record.run_files], base.record.label)
    base_shapes = {k: v for f in base.record.run_files for k, v in shapes(f).items()}
    for state in states:
        if state is base or state.record.status != "ok" or not state.record.run_files:
            continue
        result = compare(
            base_run,
            load_cell([Path(f) for f in state.record.run_files], state.record.label),
            threshold=settings.threshold,
            alpha=settings.alpha,
            paired=True,
            level=level,
        )
        theirs = {k: v for f in state.record.run_files for k, v in shapes(f).items()}
        changed = [
            f"{key}: {base_shapes[key]} -> {theirs[key]}"
            for key in sorted(set(base_shapes) & set(theirs))
            if base_shapes[key] != theirs[key]
        ]
        found.append(_verdict(state, base, result, changed))
    return found


def _verdict(
    state: CellState, base: CellState, result: Comparison, changed: list[str]
) -> MatrixVerdict:
    return MatrixVerdict(
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
                        f"x{m.ratio:.3f}"
                        + (f" [{m.ci[0]:.3f}-{m.ci[1]:.3f}]" if m.ci else "")
                        + f" p={_p(m.p_adjusted, m.p_value)}"
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
        decided=result.decided(),
        level=result.level,
        rounds=max((m.n_base for p in result.pairs for m in p.metrics), default=0),
    )


@dataclass
class Looks:
    """Where alpha stands: rounds done, the horizon the budget allows, the last look."""

    alpha: float
    most: int | None = None  # fixed after the pilot round (or --trials)
    previous: int | None = None

    def level(self, done: int, final: bool) -> float:
        """What a look after `done` rounds may spend; the final look spends the rest."""
        assert self.most is not None
        level = decide.look_alpha(self.alpha, done, self.most, self.previous, final)
        self.previous = done
        return level


def play_round(
    states: list[CellState],
    opts: RunOptions,
    settings: Settings,
    round_index: int,
    rng: random.Random,
    out: Path,
    say: Callable[[str], None],
) -> list[str]:
    """One round: server by server, each cell back to back in a random order."""
    units = settings.servers or [None]  # type: ignore[list-item]
    order = []
    for server in rng.sample(units, len(units)):
        ready = [s for s in states if s.record.status == "ok"]
        for state in rng.sample(ready, len(ready)):
            started = time.monotonic()
            run_round(state, opts, round_index, out, say, server)
            order.append(f"{state.record.label}" + (f" {server}" if server else ""))
            say(f"  {state.cell.label} {server or ''} took {time.monotonic() - started:.0f} s")
    return order


def horizon(settings: Settings, round_s: float, left_s: float) -> int:
    """The most rounds the budget allows, fixed once after the pilot round."""
    if settings.rounds is not None:
        return settings.rounds
    return max(decide.MIN_ROUNDS, min(MAX_ROUNDS, 1 + int(left_s // max(round_s, 1.0))))


def main(
    project: Project,
    opts: RunOptions,
    settings: Settings,
    say: Callable[[str], None],
    command: list[str],
) -> tuple[MatrixDocument, Path]:
    """Build, run interleaved until decided (or --trials rounds), judge; the matrix file
    is rewritten after every step."""
    clock = time.monotonic()
    cells = plan.cells(settings.axes)
    base_cell = plan.base_cell(cells, settings.base)
    matrix_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    out = Path(opts.output) / f"matrix-{matrix_id}"
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
        budget_s=settings.budget_s,
        until_decided=settings.rounds is None,
    )
    out.mkdir(parents=True, exist_ok=True)
    states = build_cells(project, opts, settings, say, out)
    document.cells = [s.record for s in states]
    store.write_atomic(path, document)
    try:
        run_rounds(states, base_cell, opts, settings, document, path, say, clock)
    finally:
        remove_worktrees(states)
    document.status = "complete"
    document.finished = store.now()
    document.seconds = round(time.monotonic() - clock, 1)
    store.write_atomic(path, document)
    return document, path


def run_rounds(
    states: list[CellState],
    base_cell: plan.Cell,
    opts: RunOptions,
    settings: Settings,
    document: MatrixDocument,
    path: Path,
    say: Callable[[str], None],
    clock: float,
) -> None:
    """Rounds until every pair is decided, the horizon is reached or the budget spent;
    a look (verdicts at the alpha it may spend) after each from MIN_ROUNDS on."""
    base = next(s for s in states if s.cell == base_cell)
    looks = Looks(settings.alpha)
    rng = random.Random(document.seed)
    out = path.parent
    round_index = 0
    while base.record.status == "ok" and sum(s.record.status == "ok" for s in states) > 1:
        started = time.monotonic()
        document.order.append(play_round(states, opts, settings, round_index, rng, out, say))
        round_index += 1
        round_s = time.monotonic() - started
        if looks.most is None:
            looks.most = horizon(settings, round_s, settings.budget_s - (time.monotonic() - clock))
            document.planned_rounds = looks.most
            pairs = len(settings.servers) * len(opts.scenarios or ["?"]) * len(opts.concurrency)
            say(plan_line(settings, round_s, looks.most, pairs * (len(states) - 1)))
        out_of_time = time.monotonic() - clock + round_s > settings.budget_s
        final = round_index >= looks.most or out_of_time
        looking = settings.rounds is None and round_index in decide.look_rounds(looks.most)
        if final or looking:
            document.verdicts = verdicts(states, base, settings, looks.level(round_index, final))
            document.rounds = round_index
            if not final and all(v.decided for v in document.verdicts):
                say(f"every pair decided after {round_index} round(s)")
                final = True
        store.write_atomic(path, document)
        if final:
            if out_of_time and round_index < looks.most:
                say(f"the budget is spent after {round_index} round(s)")
            break


def remove_worktrees(states: list[CellState]) -> None:
    for state in states:
        if state.worktree is not None:
            envs.remove_worktree(state.worktree)


def plan_line(settings: Settings, round_s: float, most: int, pairs: int) -> str:
    """After the pilot round: what the budget allows, and what a verdict needs here."""
    needs = ", ".join(
        f"{change:.0%} ~{(n := decide.rounds_needed(change, pairs, settings.alpha))} rounds "
        f"({n * round_s / 60:.0f} min)"
        for change in sorted({settings.threshold, 0.10, 0.15})
    )
    return (
        f"a round takes {round_s:.0f} s: up to {most} round(s) in the budget. Flagging a "
        f"change on one of {pairs} pair(s) with 80% power at this machine's usual noise "
        f"(sd {decide.NOISE_SD} per round) needs: {needs}"
    )


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
    plan.base_cell(plan.cells(axes), raw_base)  # a bad --matrix-base is one line, now
