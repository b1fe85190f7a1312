"""Turns: how a matrix puts its cells' windows seconds apart (``--pairing alternate``).

Each cell's runbench runs in its own environment and process, all of them at once; each
takes a turn for every window and for its server's start and stop (:meth:`Turns.window`,
through djbench.run.bench.Bench.window). A referee (:func:`referee`, in
the matrix's process) gives one turn at a time, and only when every cell still running
waits for one: so no window ever overlaps another cell's window, start, gate, settling
or stop, while the cells' servers stay alive side by side (each in its own process tree,
on the same server CPUs, idle between its windows). The cells run their windows in the
same order (one seed), so the referee alternates them page by page, in a fresh random
order at every step: the two sides of a pair are measured seconds apart, where running
each cell's whole part back to back put them 11-13 s apart (issue 56).

The protocol is files in one folder, one cell a name: the cell writes ``NAME.ready``
(what it is about to run) and waits for ``NAME.go``; the referee removes ``.ready``,
writes ``.go`` and waits for ``NAME.done`` or the cell's exit. Files, not pipes: the
cell is a manage.py command started with a flag, and a wait can check that the other
side is still alive (the referee's PID in ``referee.pid``): a cell whose referee died
stops its server and ends instead of waiting (TurnLost), and every wait is bounded.
Hand-written: no library offers turn-taking between unrelated processes in a few lines.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

POLL_S = 0.01  # how often a wait looks (a turn's hand-over costs about this)
REFEREE = "referee.pid"


class TurnLost(Exception):
    """The referee is gone or a wait ran out: the cell stops rather than run unpaired."""


def _write(path: Path, text: str) -> None:
    """Atomically: the other side never reads half a file."""
    part = path.with_suffix(path.suffix + ".part")
    part.write_text(text)
    part.replace(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prepare(folder: Path) -> Path:
    """The folder of a round's turns, with the referee's PID in it: written before any
    cell starts, so that a cell can always tell whether its referee is alive."""
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder / REFEREE, str(os.getpid()))
    return folder


@dataclass(frozen=True)
class Turns:
    """A cell's side: wait for the turn before every window, start and stop."""

    folder: Path
    name: str
    timeout_s: float = 3600.0

    @classmethod
    def of(cls, spelled: str) -> Turns:
        """From --turns FOLDER/NAME."""
        path = Path(spelled)
        return cls(path.parent, path.name)

    @contextlib.contextmanager
    def window(self, what: str) -> Iterator[None]:
        """Wait for the turn (TurnLost when the referee is gone or `timeout_s` passes),
        run the window, hand the turn back."""
        go = self.folder / f"{self.name}.go"
        try:
            referee = int((self.folder / REFEREE).read_text())
            _write(self.folder / f"{self.name}.ready", what)
        except (OSError, ValueError):
            raise TurnLost(f"no turn for {what}: {self.folder} holds no referee") from None
        until = time.monotonic() + self.timeout_s
        while not go.exists():
            if not _alive(referee) or time.monotonic() > until:
                raise TurnLost(f"no turn for {what} (the matrix's referee is gone)")
            time.sleep(POLL_S)
        go.unlink()
        try:
            yield
        finally:
            _write(self.folder / f"{self.name}.done", what)


@dataclass
class Step:
    """One turn given: which cell, and what it ran."""

    name: str
    what: str


def referee(
    cells: dict[str, subprocess.Popen[bytes]],
    folder: Path,
    rng: random.Random,
    timeout_s: float,
) -> list[Step]:
    """Give turns until every cell's process has ended: at each step a turn for each
    cell waiting for one, in a random order, each given only once every cell still
    running waits again (or has ended). Past `timeout_s` the cells still running are
    terminated (their runbench stops its servers). Returns the turns given, in order
    (`prepare` wrote the folder before the cells started)."""
    until = time.monotonic() + timeout_s
    steps: list[Step] = []
    while (waiting := _all_waiting(cells, folder, until)) is not None:
        if not waiting:
            return steps
        for position, name in enumerate(rng.sample(sorted(waiting), len(waiting))):
            if position and _all_waiting(cells, folder, until) is None:
                break
            steps.append(_turn(name, cells[name], folder, until))
    for process in cells.values():  # out of time
        if process.poll() is None:
            process.terminate()
    return steps


def _all_waiting(
    cells: dict[str, subprocess.Popen[bytes]], folder: Path, until: float
) -> set[str] | None:
    """Wait until every cell still running waits for a turn: those waiting (empty: every
    cell has ended), or None when time ran out."""
    while time.monotonic() < until:
        running = {n for n, p in cells.items() if p.poll() is None}
        waiting = {n for n in running if (folder / f"{n}.ready").exists()}
        if waiting == running:
            return waiting
        time.sleep(POLL_S)
    return None


def _turn(name: str, process: subprocess.Popen[bytes], folder: Path, until: float) -> Step:
    """One turn: the cell's window, until it says done or ends."""
    ready, done = folder / f"{name}.ready", folder / f"{name}.done"
    what = ready.read_text() if ready.exists() else ""
    ready.unlink(missing_ok=True)
    _write(folder / f"{name}.go", what)
    while not done.exists() and process.poll() is None and time.monotonic() < until:
        time.sleep(POLL_S)
    done.unlink(missing_ok=True)
    return Step(name, what)
