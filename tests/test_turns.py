"""Turns between processes (djbench.run.turns): how a matrix puts its cells' windows
seconds apart. Real processes, each a cell that works between its windows, as a cell's
runbench starts, gates and stops its server between them."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from djbench.run import turns

CELL = """
import json, sys, time
from djbench.run.turns import Turns
mine, windows, log, busy = Turns.of(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])

def note(kind, began):
    with open(log, "a") as out:
        out.write(json.dumps([mine.name, kind, began, time.monotonic()]) + "\\n")

for i in range(windows):
    began = time.monotonic(); time.sleep(busy); note("busy", began)
    with mine.window(f"page-{i}"):
        began = time.monotonic(); time.sleep(0.03); note("window", began)
began = time.monotonic(); time.sleep(busy); note("busy", began)
"""


def _cells(folder: Path, log: Path, windows: dict[str, int], busy: float = 0.02) -> dict:
    return {
        name: subprocess.Popen(
            [sys.executable, "-c", CELL, str(folder / name), str(count), str(log), str(busy)]
        )
        for name, count in windows.items()
    }


def test_windows_take_turns_and_never_overlap_another_cells_work(tmp_path: Path) -> None:
    folder = turns.prepare(tmp_path / "round-1")
    log = tmp_path / "log.jsonl"
    cells = _cells(folder, log, {"base": 4, "new": 4, "other": 3})
    steps = turns.referee(cells, folder, random.Random(1), timeout_s=60)
    assert all(p.wait(timeout=10) == 0 for p in cells.values())
    noted = [json.loads(line) for line in log.read_text().splitlines()]
    windows = [n for n in noted if n[1] == "window"]
    assert len(windows) == len(steps) == 11
    for name, _, began, ended in windows:  # nothing else of any cell ran meanwhile
        others = [n for n in noted if n[0] != name]
        assert all(o_end <= began or o_began >= ended for _, _, o_began, o_end in others)
    # Step by step: every cell once (in a random order) before any cell's next window.
    names = [s.name for s in steps]
    assert (
        sorted(names[:3])
        == sorted(names[3:6])
        == sorted(names[6:9])
        == [
            "base",
            "new",
            "other",
        ]
    )
    assert sorted(names[9:]) == ["base", "new"]  # "other" ended after three
    assert [s.what for s in steps if s.name == "base"] == [f"page-{i}" for i in range(4)]
    assert names[:3] != names[3:6] or names[3:6] != names[6:9]  # orders vary by step


def test_a_referee_out_of_time_ends_every_cell(tmp_path: Path) -> None:
    folder = turns.prepare(tmp_path / "round-1")
    cells = _cells(folder, tmp_path / "log.jsonl", {"slow": 2, "fast": 2}, busy=30.0)
    began = time.monotonic()
    turns.referee(cells, folder, random.Random(1), timeout_s=1.0)
    assert all(p.wait(timeout=10) is not None for p in cells.values())
    assert time.monotonic() - began < 15


def test_a_cell_whose_referee_is_gone_stops_instead_of_waiting(tmp_path: Path) -> None:
    folder = tmp_path / "round-1"
    folder.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (folder / turns.REFEREE).write_text(str(gone.pid))
    mine = turns.Turns(folder, "cell", timeout_s=30)
    began = time.monotonic()
    with pytest.raises(turns.TurnLost), mine.window("page"):
        pass
    assert time.monotonic() - began < 5
    # A folder no referee prepared (a hand-made --turns): a sentence, not a traceback.
    stray = turns.Turns(tmp_path / "nowhere", "cell")
    with pytest.raises(turns.TurnLost, match="holds no referee"), stray.window("page"):
        pass
