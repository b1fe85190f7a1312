"""A plain run's pairings side by side (issue 56: windows seconds apart, not minutes): the
same A/A run with ``--pairing sequential`` (each deployment's lifetime back to back, as
before) and ``--pairing alternate`` (from round 2, the round's deployments alive at once,
their windows taking turns page by page), in one command, on one machine state.

    .venv/bin/python loadtests/plain_pairing_check.py [ROUNDS] [REPEATS] [SERVERS]
    (default 8 rounds, 2 repeats, gunicorn-sync,uwsgi; health-sync and movies-sync)

Each server runs as two deployments that differ only in a setting no page reads
(`--axis SECRET_KEY=...`, as loadtests/lifetime_luck.py does): two A/A pairs per run,
four deployments a round, so that a sequential round spaces a pair's windows as a
default run's rounds do. Each repeat runs the two pairings in the order ABBA. Round 1
is back to back under both, so the figures are of rounds 2 to ROUNDS:

- seconds per round, from the progress lines' arrival times;
- the A/A sd of a round's log(req/s B / req/s A), per page and server, pooled over the
  repeats (each run's own mean removed), with a 95% chi-square interval; and the ratio
  of the two pairings' variances with its F interval. The rounds a verdict needs grow
  with that variance, and its time with rounds x seconds per round: their product, the
  cost of a verdict, is printed last (lower is better).
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pairing_check import sd_interval, variance_ratio

from djbench.results.store import load

ROOT = Path(__file__).resolve().parent.parent
PAGES = "health-sync,movies-sync"
KEYS = ("aa-check-key-one-0123456789abcdef", "aa-check-key-two-0123456789abcdef")


def run(pairing: str, rounds: int, servers: str, out: Path) -> tuple[Path, list[float]]:
    """One A/A run: its results file, and the seconds each round from the second took."""
    command = [
        str(ROOT / ".venv" / "bin" / "python"), "manage.py", "runbench", "--pairing", pairing,
        "--servers", servers, "--axis", f"SECRET_KEY={','.join(KEYS)}", "--scenarios", PAGES,
        "--trials", str(rounds), "--duration", "2", "--warmup", "1", "--concurrency", "32",
        "--no-color", "--output", str(out),
    ]  # fmt: skip
    print("$", " ".join(command), flush=True)
    marks: list[float] = []
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:  # bounded: the run ends (every runbench loop is)
            if re.match(r"round \d+ of \d+", line) or line.startswith("Results"):
                marks.append(time.monotonic())
        proc.wait(timeout=3600)
    [path] = sorted(out.glob("*.json"))
    print(f"  exit {proc.returncode}; {path}", flush=True)
    return path, [b - a for a, b in itertools.pairwise(marks[1:])]


def log_ratios(path: Path) -> dict[str, list[float]]:
    """Per server and page, the rounds' log(req/s B / req/s A), rounds 2 on, this run's
    mean removed (the residuals are pooled over runs)."""
    per: dict[tuple[str, str, str], dict[int, float]] = {}
    for entry in load(path).results:
        side = dict(entry.variant or {}).get("SECRET_KEY", "")
        for t in entry.trials:
            if t.valid and t.rps and t.round > 0:
                per.setdefault((entry.server, entry.scenario, side), {})[t.round] = t.rps
    out: dict[str, list[float]] = {}
    for server, page, side in sorted(per):
        if side != KEYS[0]:
            continue
        a, b = per[(server, page, KEYS[0])], per.get((server, page, KEYS[1]), {})
        xs = [math.log(b[r] / a[r]) for r in sorted(set(a) & set(b))]
        if len(xs) > 1:
            out[f"{server} {page}"] = [x - statistics.fmean(xs) for x in xs]
    return out


def main(rounds: int, repeats: int, servers: str) -> int:
    work = Path(tempfile.mkdtemp(prefix="djbench-plain-pairing-"))
    seconds: dict[str, list[float]] = {"sequential": [], "alternate": []}
    residuals: dict[str, dict[str, list[float]]] = {"sequential": {}, "alternate": {}}
    dfs: dict[str, dict[str, int]] = {"sequential": {}, "alternate": {}}
    order = ["sequential", "alternate"]
    began = time.monotonic()
    for repeat in range(repeats):
        for pairing in order if repeat % 2 == 0 else order[::-1]:
            path, took = run(pairing, rounds, servers, work / f"{pairing}-{repeat}")
            seconds[pairing] += took
            for key, xs in log_ratios(path).items():
                residuals[pairing].setdefault(key, []).extend(xs)
                dfs[pairing][key] = dfs[pairing].get(key, 0) + len(xs) - 1
    print(f"\nA/A plain runs of {servers} x 2 keys, rounds 2-{rounds}, {repeats} run(s) a pairing, "
          f"{(time.monotonic() - began) / 60:.1f} min in all")  # fmt: skip
    cost: dict[str, dict[str, float]] = {"sequential": {}, "alternate": {}}
    for pairing in order:
        s = seconds[pairing]
        print(f"  {pairing}: {statistics.fmean(s):.1f} s per round [{min(s):.1f}-{max(s):.1f}]")
        for key, xs in sorted(residuals[pairing].items()):
            sd, low, high = sd_interval(xs, dfs[pairing][key])
            cost[pairing][key] = sd * sd * statistics.fmean(s)
            print(f"    {key}: A/A sd per round {sd:.4f} [{low:.4f}-{high:.4f}] "
                  f"({dfs[pairing][key]} df)")  # fmt: skip
    for key in sorted(set(residuals["alternate"]) & set(residuals["sequential"])):
        ratio, low, high = variance_ratio(
            residuals["alternate"][key], dfs["alternate"][key],
            residuals["sequential"][key], dfs["sequential"][key],
        )  # fmt: skip
        print(f"  {key}: variance alternate/sequential {ratio:.2f} [{low:.2f}-{high:.2f}]; "
              f"a verdict's time alternate/sequential "
              f"{cost['alternate'][key] / cost['sequential'][key]:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(
        main(
            int(args[0]) if args else 8,
            int(args[1]) if len(args) > 1 else 2,
            args[2] if len(args) > 2 else "gunicorn-sync,uwsgi",
        )
    )
