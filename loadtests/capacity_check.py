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

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SLO_MS = 100.0
SERVERS = ("gunicorn-sync", "uvicorn")
SCENARIO = "health-sync"


def runbench(out: Path, *args: str) -> dict:  # type: ignore[type-arg]
    before = set(out.glob("*.json"))
    subprocess.run(
        [sys.executable, "manage.py", "runbench", "--no-color", "--output", str(out), *args],
        check=False,
        stdout=subprocess.DEVNULL,
    )
    written = set(out.glob("*.json")) - before
    if len(written) != 1:
        raise SystemExit(f"runbench {' '.join(args)} wrote no results file in {out}")
    return json.loads(written.pop().read_text())  # type: ignore[no-any-return]


def main() -> int:
    out = Path(tempfile.mkdtemp(prefix="capacity-check-"))
    began = time.monotonic()
    doc = runbench(
        out,
        *("--capacity", "--slo-p99", f"{SLO_MS:g}", "--servers", ",".join(SERVERS)),
        *("--scenarios", SCENARIO),
    )
    search_s = time.monotonic() - began
    print(f"capacity search: {search_s / 60:.1f} min ({out})")
    wrong = 0
    for entry in doc["results"]:
        cap = entry.get("capacity") or {}
        low, high = (cap.get("interval") or (None, None))[:2]
        print(f"{entry['server']}: {cap.get('rps')} req/s [{low}-{high}] ({cap.get('stopped')})")
        for rate, should_pass in ((low, True), (high and 1.2 * high, False)):
            if not rate:
                print("  no interval end to hold it to")
                wrong += 1
                continue
            started = time.monotonic()
            held = runbench(
                out,
                *("--servers", entry["server"], "--scenarios", SCENARIO, "--rate", f"{rate:.0f}"),
                *("--duration", "30", "--trials", "1"),
            )
            [trial] = held["results"][0]["trials"]
            p99 = trial["latency_ms"]["p99"]
            passed = p99 is not None and p99 <= SLO_MS and trial["error_rate"] <= 0.001
            ok = passed == should_pass
            wrong += not ok
            print(
                f"  {rate:,.0f} req/s for 30 s: p99 {p99} ms, {trial['rps']:.0f} req/s done, "
                f"errors {trial['error_rate']:.2%}: {'meets' if passed else 'misses'} "
                f"{SLO_MS:g} ms ({'as expected' if ok else 'NOT as expected'}; "
                f"{time.monotonic() - started:.0f} s)"
            )
    print(f"total {(time.monotonic() - began) / 60:.1f} min")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
