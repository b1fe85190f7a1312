"""Without a terminal (a pipe, a file, a CI log) runbench prints a flushed line per
finished trial as it happens, not a progress bar drawn at the end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from djbench.reports.console import trial_line
from djbench.results.model import Latency, Notice, Trial
from tests.live import ROOT

LINE = re.compile(r"^\[(\d+)/(\d+)\] uvicorn health-sync c=32 round (\d): [\d,]+ req/s, p99 ")


def test_a_trial_line_says_its_figures_and_its_state() -> None:
    ok = Trial(
        round=0,
        valid=True,
        rps=1234.5,
        requests=2469,
        duration_s=2.0,
        latency_ms=Latency(p99=12.34),
    )
    assert trial_line(3, 9, "uvicorn health-sync c=32 round 1", ok) == (
        "[3/9] uvicorn health-sync c=32 round 1: 1,234 req/s, p99 12.3 ms, ok"
    )
    bad = Trial(
        round=0,
        valid=False,
        rps=0.0,
        requests=0,
        duration_s=2.0,
        invalid=Notice(code="no_requests"),
    )
    line = trial_line(1, 9, "x", bad)
    assert line.startswith("[1/9] x: 0 req/s, p99 -, invalid: ") and "\n" not in line


@pytest.mark.servers
def test_a_piped_run_prints_each_trial_while_it_runs(
    live_database: str, tmp_path: Path, one_pass: None
) -> None:
    argv = [
        *("--servers", "uvicorn", "--scenarios", "health-sync", "--trials", "3"),
        *("--duration", "0.5", "--warmup", "0.2", "--ws-idle", "0", "--no-setup"),
        *("--output", str(tmp_path)),
    ]
    seen: list[tuple[str, float]] = []  # (line, when it came)
    with subprocess.Popen(
        [sys.executable, "manage.py", "runbench", *argv],
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": ""},  # the pipe block-buffers by default
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                seen.append((line.rstrip("\n"), time.monotonic()))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            proc.wait(timeout=180)
            ended = time.monotonic()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        reader.join(timeout=10)
        errors = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == 0, errors
    trials = [(m, when) for line, when in seen if (m := LINE.match(line))]
    assert [int(m[1]) for m, _ in trials] == [1, 2, 3], seen
    assert {int(m[2]) for m, _ in trials} == {3}
    # The first came while two more trials (0.7 s each at least) and the end were still
    # to run: written and flushed as it happened, not when the run ended.
    assert ended - trials[0][1] > 1.0, seen
    bar = re.compile(r"\d+/\d+ \d+:\d\d:\d\d")  # a progress bar's count and elapsed time
    assert not any(bar.search(line) for line, _ in seen), seen


def test_a_table_in_a_log_is_drawn_at_its_own_width() -> None:
    """Without a terminal (a CI log) no column is squeezed: figures read whole, never
    '371…', and no column is emptied (issue 57: --list's scenario table)."""
    from io import StringIO

    from rich.table import Table

    from djbench.reports.console import console_for

    out = StringIO()
    table = Table(title="wide")
    for i in range(14):
        table.add_column(f"a column named {i}")
    table.add_row(*[f"{1_234_567.5 + i:,.1f} req/s" for i in range(14)])
    console_for(out).print(table)
    printed = out.getvalue()
    assert "…" not in printed
    assert all(f"{1_234_567.5 + i:,.1f} req/s" in printed for i in range(14))
