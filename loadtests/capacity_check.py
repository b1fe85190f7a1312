"""Issue 37's live capacity check: each capacity with its interval, then held to it.

    python -m loadtests.capacity_check            # about 10 minutes; nothing else running

1. ``runbench --capacity --slo-p99 100 --servers gunicorn-sync,uvicorn --scenarios
   health-sync``: each server's capacity and its 95% interval (results/capacity.py).
2. For each server, one open-loop window of 30 s (``--rate``, one trial) at the
   interval's low end, which must meet p99 <= 100 ms, and one at 1.2x its high end,
   which must not.
Prints one line per window and the wall times; exit 1 when a window disagrees.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from djbench.reports.search_words import capacity_text
from djbench.results import store
from djbench.results.model import PairResult, RunDocument

SLO_MS = 100.0
SERVERS = ("gunicorn-sync", "uvicorn")
SCENARIO = "health-sync"


def runbench(out: Path, *args: str) -> RunDocument:
    """One runbench into ``out``; its results file, read by the results model.

    runbench exits non-zero when its only window was invalid (an overloaded server's
    timeouts): that is a finding here, so its last stderr line is shown, indented.
    """
    before = set(out.glob("*.json"))
    done = subprocess.run(
        [sys.executable, "manage.py", "runbench", "--no-color", "--output", str(out), *args],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if done.returncode and done.stderr.strip():
        print(f"  runbench exit {done.returncode}: {done.stderr.strip().splitlines()[-1]}")
    written = set(out.glob("*.json")) - before
    if len(written) != 1:
        raise SystemExit(f"runbench {' '.join(args)} wrote no results file in {out}")
    try:
        return store.load(written.pop())
    except store.ResultsError as exc:
        raise SystemExit(f"runbench {' '.join(args)}: {exc}") from None


def held_to(server: str, rate: float, should_pass: bool, out: Path) -> bool:
    """One 30 s open-loop window at ``rate``; True when it met the target as expected."""
    started = time.monotonic()
    held = runbench(
        out,
        *("--servers", server, "--scenarios", SCENARIO, "--rate", f"{rate:.0f}"),
        *("--duration", "30", "--trials", "1"),
    )
    [trial] = held.results[0].trials
    p99 = trial.latency_ms.p99
    passed = p99 is not None and p99 <= SLO_MS and trial.error_rate <= 0.001
    ok = passed == should_pass
    shown = "none" if p99 is None else f"{p99:,.1f}"
    print(
        f"  {rate:,.0f} req/s for 30 s: p99 {shown} ms, {trial.rps:,.0f} req/s done, "
        f"errors {trial.error_rate:.2%}: {'meets' if passed else 'misses'} "
        f"{SLO_MS:g} ms ({'as expected' if ok else 'NOT as expected'}; "
        f"{time.monotonic() - started:.0f} s)"
    )
    return ok


def described(entry: PairResult) -> tuple[float | None, float | None]:
    """Print the server's capacity in the report's words; return its interval's ends."""
    if entry.capacity is None:
        print(f"{entry.server}: no capacity search recorded")
        return None, None
    print(f"{entry.server}: {capacity_text(entry.capacity)}")
    if entry.capacity.rps is None:
        return None, None
    return entry.capacity.interval or (None, None)


def main() -> int:
    out = Path(tempfile.mkdtemp(prefix="capacity-check-"))
    began = time.monotonic()
    doc = runbench(
        out,
        *("--capacity", "--slo-p99", f"{SLO_MS:g}", "--servers", ",".join(SERVERS)),
        *("--scenarios", SCENARIO),
    )
    print(f"capacity search: {(time.monotonic() - began) / 60:.1f} min ({out})")
    wrong = 0
    for entry in doc.results:
        low, high = described(entry)
        for rate, should_pass in ((low, True), (high and 1.2 * high, False)):
            if not rate:
                print("  no interval end to hold it to")
                wrong += 1
                continue
            wrong += not held_to(entry.server, rate, should_pass, out)
    print(f"total {(time.monotonic() - began) / 60:.1f} min")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
