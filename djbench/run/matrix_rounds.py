"""A matrix round: each cell's runbench for one round (or one server's part of it), and
how the cells are put side by side (``--pairing``).

- ``alternate`` (the default): from the second round, every cell's runbench at once,
  its server alive beside the others', their windows taking turns page by page
  (djbench.run.turns): the two sides of a pair seconds apart. The first round, a fixed
  --port and a cell whose djbench has no turns (an older ref) run ``sequential``.
- ``sequential``: each cell's part back to back, in a random order (the design before
  issue 56: the two sides of a pair 11-13 s apart).

A cell whose runbench refuses, crashes, saves nothing or runs out of time fails with its
reason; the others go on.
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from djbench.plan.runplan import RunOptions
from djbench.run import turns
from djbench.run.cli import cell_argv
from djbench.run.matrix_build import CellState, Settings, run_in_cell

CELL_TIMEOUT_FLOOR = 600  # seconds a cell's round may take at least, before it is killed


def cell_timeout(opts: RunOptions) -> float:
    """How long one cell's round may take before it is killed: generous (40x) against
    the plan's size (servers x scenarios x concurrency levels x one window)."""
    per_window = (opts.soak_s or opts.duration) + opts.warmup + 5
    windows = max(1, len(opts.servers)) * (len(opts.scenarios) or 3) * len(opts.concurrency)
    return max(CELL_TIMEOUT_FLOOR, 40 * per_window * windows)


@dataclass(frozen=True)
class CellRound:
    """A cell's runbench for one round (or one server's part of it): its command and
    where its output goes."""

    state: CellState
    argv: list[str]
    env: dict[str, str]
    log: Path
    folder: Path  # the cell's results for this round (a file per server)


def round_command(
    state: CellState, opts: RunOptions, round_index: int, out: Path, server: str | None = None
) -> CellRound:
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
    env = {**os.environ, **state.env}
    env.pop("VIRTUAL_ENV", None)
    cell_out.mkdir(parents=True, exist_ok=True)
    return CellRound(state, argv, env, cell_out / f"round-{round_index + 1}.log", cell_out)


def run_round(
    state: CellState,
    opts: RunOptions,
    round_index: int,
    out: Path,
    say: Callable[[str], None],
    server: str | None = None,
) -> None:
    """One round of the plan (or of one server's part of it) in the cell, alone."""
    command = round_command(state, opts, round_index, out, server)
    state.record.commands.append(shlex.join(command.argv))
    say(f"round {round_index + 1}: {state.cell.label}" + (f" {server}" if server else ""))
    code = run_in_cell(state, command.argv, command.env, command.log, cell_timeout(opts))
    round_ended(command, code, round_index)


def round_ended(command: CellRound, code: int | None, round_index: int) -> None:
    """A cell's round done: its results file noted, or its failure (`code` None: it was
    killed at its timeout)."""
    state = command.state
    files = sorted(p for p in command.folder.glob("*.json") if p.is_file())
    if files and str(files[-1]) not in state.record.run_files:
        state.record.run_files.append(str(files[-1]))
    state.record.run_file = state.record.run_file or (str(files[-1]) if files else None)
    if (why := round_failure(code, command.log, bool(files))) is not None:
        state.record.status = "failed"
        state.record.reason = f"its runbench in round {round_index + 1} {why} (log: {command.log})"


def round_failure(code: int | None, log: Path, saved: bool) -> str | None:
    """Why a cell's round did not run, or None. 0: done (a pair that failed or was
    invalid is a finding in its file); 1: done, a threshold missed (in its file too).
    A refusal, a crash, a timeout, a traceback or no results file at all mean the round
    did not run: the cell fails rather than go on
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


def play_round(
    states: list[CellState],
    opts: RunOptions,
    settings: Settings,
    round_index: int,
    rng: random.Random,
    out: Path,
    say: Callable[[str], None],
) -> list[str]:
    """One round, server by server (in a random order): the cells side by side, taking
    turns (`side_by_side`), or back to back in a random order. What ran, in order.

    The first round is always back to back: each cell sets its project up (migrations,
    data) and gates its servers there, which cells sharing a checkout and its database
    must not do at once. So is every round with a fixed --port (two servers cannot
    listen on it) or a cell whose djbench takes no turns (an older ref: said)."""
    units = settings.servers or [None]  # type: ignore[list-item]
    order = []
    for server in rng.sample(units, len(units)):
        ready = [s for s in states if s.record.status == "ok"]
        together = settings.pairing == "alternate" and round_index > 0 and len(ready) > 1
        if together and opts.port is None and all(map(takes_turns, ready)):
            order += side_by_side(ready, opts, round_index, rng, out, say, server)
            continue
        if together and round_index == 1:
            why = (
                f"--port {opts.port}: one server at a time can listen on it"
                if opts.port is not None
                else ", ".join(s.cell.label for s in ready if not takes_turns(s))
                + ": its djbench takes no turns (an older version)"
            )
            say(f"{why}; the cells run back to back")
        for state in rng.sample(ready, len(ready)):
            started = time.monotonic()
            run_round(state, opts, round_index, out, say, server)
            order.append(f"{state.record.label}" + (f" {server}" if server else ""))
            say(f"  {state.cell.label} {server or ''} took {time.monotonic() - started:.0f} s")
    return order


def takes_turns(state: CellState) -> bool:
    """Whether the cell's djbench can take turns (a ref cell of an older djbench cannot):
    asked once, of its own interpreter."""
    if state.turns is None:
        assert state.python is not None
        env = {**os.environ, **state.env}
        env.pop("VIRTUAL_ENV", None)
        probe = subprocess.run(
            [state.python, "-c", "import djbench.run.turns"],
            cwd=state.project_dir,
            env=env,
            capture_output=True,
            timeout=120,
            check=False,
        )
        state.turns = probe.returncode == 0
    return state.turns


def side_by_side(
    states: list[CellState],
    opts: RunOptions,
    round_index: int,
    rng: random.Random,
    out: Path,
    say: Callable[[str], None],
    server: str | None,
) -> list[str]:
    """Every cell's runbench for this round at once, their windows given turns by the
    referee (djbench.run.turns): each cell's server alive beside the others', no window
    beside anything else. Every process is ended before this returns."""
    unit = server or "all"
    folder = turns.prepare((out / "turns" / f"round-{round_index + 1}" / unit).resolve())
    commands = {s.cell.slug: round_command(s, opts, round_index, out, server) for s in states}
    say(
        f"round {round_index + 1}: {unit}, cells side by side: "
        + ", ".join(s.cell.label for s in states)
    )
    started = time.monotonic()
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for slug, command in commands.items():
            command.argv.extend(["--turns", str(folder / slug)])
            command.state.record.commands.append(shlex.join(command.argv))
            with command.log.open("w") as handle:
                processes[slug] = subprocess.Popen(
                    command.argv,
                    cwd=command.state.project_dir,
                    env=command.env,
                    stdout=handle,
                    stderr=subprocess.STDOUT,
                )
        timeout = cell_timeout(opts) * len(states)
        steps = turns.referee(processes, folder, rng, timeout)
    finally:
        codes = {slug: _ended(process) for slug, process in processes.items()}
        shutil.rmtree(folder, ignore_errors=True)
    for slug, command in commands.items():
        round_ended(command, codes.get(slug), round_index)
    labels = {s.cell.slug: s.record.label for s in states}
    say(f"  {unit}: {len(steps)} turn(s) in {time.monotonic() - started:.0f} s")
    return [f"{labels[step.name]} {step.what}" for step in steps]


def _ended(process: subprocess.Popen[bytes]) -> int | None:
    """The process's exit code once ended; None when it had to be stopped (a timeout, or
    the matrix itself interrupted): terminated, then killed after 30 s."""
    if process.poll() is not None:
        return process.returncode
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return None
