"""The matrix's pairings side by side (issue 56, item 3): an A/A ref matrix run with
``--pairing sequential`` (each cell's part of a round back to back) and ``--pairing
alternate`` (the cells' runbench processes at once, windows taking turns page by page),
in one command, on one machine state.

    .venv/bin/python loadtests/pairing_check.py [ROUNDS] [REPEATS] [SERVER]
    (default 8 rounds, 2 repeats, gunicorn-sync; health-sync and movies-sync)

A fresh clone of this repository gets one commit that changes only a comment; each
repeat runs the two pairings on `ref=HEAD~1,HEAD` with --trials ROUNDS, in the order
ABBA (the second repeat BA), so that a drift of the machine hits both alike. Round 1
is back to back under both pairings (each cell sets its project up there), so the
figures are of rounds 2 to ROUNDS:

- seconds per round, from the matrix's ``round_seconds``;
- the A/A sd of a round's log(req/s HEAD / req/s HEAD~1), per page, pooled over the
  repeats (each matrix's own mean removed), with a 95% chi-square interval; and the
  ratio of the two pairings' variances with its F interval. The rounds a verdict needs
  grow with that variance, and its time with rounds x seconds per round: their product
  is the cost of a verdict, printed last (lower is better).

The cell environments are built by uv once (cached) before the first matrix's rounds.
Measured here: see docs/measuring.md ("Cells side by side").
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from scipy import stats

from djbench.results.store import load

ROOT = Path(__file__).resolve().parent.parent
PAGES = "health-sync,movies-sync"


def clone() -> Path:
    """This repository at HEAD, plus a commit that changes only a comment."""
    work = Path(tempfile.mkdtemp(prefix="djbench-pairing-")) / "djbench"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(work)], check=True)
    settings = work / "sampleproject" / "settings.py"
    settings.write_text(settings.read_text() + "\n# pairing check: a comment, nothing else\n")
    subprocess.run(
        ["git", "-c", "user.name=djbench", "-c", "user.email=djbench@localhost", "commit",
         "-qam", "pairing check: a comment"],
        cwd=work, check=True,
    )  # fmt: skip
    return work


def matrix(work: Path, pairing: str, rounds: int, server: str, out: Path) -> dict:
    """One A/A matrix; its document as JSON."""
    command = [
        str(ROOT / ".venv" / "bin" / "python"), "manage.py", "runbench",
        "--matrix", "ref=HEAD~1,HEAD", "--pairing", pairing, "--servers", server,
        "--scenarios", PAGES, "--trials", str(rounds), "--no-cost", "--no-color",
        "--output", str(out),
    ]  # fmt: skip
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=3600)
    [path] = sorted(out.glob("matrix-*/matrix.json"))
    print(f"  exit {done.returncode}; {path}", flush=True)
    return json.loads(path.read_text())


def log_ratios(document: dict) -> dict[str, list[float]]:
    """Per page, the rounds' log(req/s new / req/s base), rounds 2 on, this matrix's mean
    removed (the residuals pooled over matrices)."""
    base, new = document["cells"]
    sides = []
    for cell in (base, new):
        per: dict[tuple[str, int], float] = {}
        for file in cell["run_files"]:
            for entry in load(Path(file)).results:
                for t in entry.trials:
                    if t.valid and t.rps and t.round > 0:
                        per[(entry.scenario, t.round)] = t.rps
        sides.append(per)
    out: dict[str, list[float]] = {}
    for page, r in sorted(set(sides[0]) & set(sides[1])):
        out.setdefault(page, []).append(math.log(sides[1][(page, r)] / sides[0][(page, r)]))
    return {page: [x - statistics.fmean(xs) for x in xs] for page, xs in out.items()}


def sd_interval(residuals: list[float], df: int) -> tuple[float, float, float]:
    ss = sum(x * x for x in residuals)
    sd = math.sqrt(ss / df)
    low = math.sqrt(ss / stats.chi2.ppf(0.975, df))
    high = math.sqrt(ss / stats.chi2.ppf(0.025, df))
    return sd, low, high


def variance_ratio(a: list[float], da: int, b: list[float], db: int) -> tuple[float, float, float]:
    """The ratio of two residual variances (sums of squares over their df), with its
    95% F interval."""
    ratio = (sum(x * x for x in a) / da) / (sum(x * x for x in b) / db)
    return ratio, ratio / stats.f.ppf(0.975, da, db), ratio / stats.f.ppf(0.025, da, db)


def main(rounds: int, repeats: int, server: str) -> int:
    work = clone()
    print(f"clone: {work}", flush=True)
    seconds: dict[str, list[float]] = {"sequential": [], "alternate": []}
    residuals: dict[str, dict[str, list[float]]] = {"sequential": {}, "alternate": {}}
    dfs: dict[str, dict[str, int]] = {"sequential": {}, "alternate": {}}
    order = ["sequential", "alternate"]
    for repeat in range(repeats):
        for pairing in order if repeat % 2 == 0 else order[::-1]:
            document = matrix(work, pairing, rounds, server, work / "out" / f"{pairing}-{repeat}")
            seconds[pairing] += document["round_seconds"][1:]
            for page, xs in log_ratios(document).items():
                residuals[pairing].setdefault(page, []).extend(xs)
                dfs[pairing][page] = dfs[pairing].get(page, 0) + len(xs) - 1
    print(f"\n{server}, A/A ref matrix, rounds 2-{rounds}, {repeats} matrices per pairing")
    cost: dict[str, dict[str, float]] = {"sequential": {}, "alternate": {}}
    for pairing in order:
        s = seconds[pairing]
        print(
            f"  {pairing}: {statistics.fmean(s):.1f} s per round [{min(s):.1f}-{max(s):.1f}] "
            f"over {len(s)} rounds"
        )
        for page, xs in sorted(residuals[pairing].items()):
            df = dfs[pairing][page]
            sd, low, high = sd_interval(xs, df)
            cost[pairing][page] = sd * sd * statistics.fmean(s)
            print(f"    {page}: A/A sd per round {sd:.4f} [{low:.4f}-{high:.4f}] ({df} df)")
    for page in sorted(residuals["alternate"]):
        ratio, low, high = variance_ratio(
            residuals["alternate"][page], dfs["alternate"][page],
            residuals["sequential"][page], dfs["sequential"][page],
        )  # fmt: skip
        relative = cost["alternate"][page] / cost["sequential"][page]
        print(
            f"  {page}: variance alternate/sequential {ratio:.2f} [{low:.2f}-{high:.2f}]; "
            f"a verdict's time (variance x seconds per round) alternate/sequential "
            f"{relative:.2f}"
        )
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(
        main(
            int(args[0]) if args else 8,
            int(args[1]) if len(args) > 1 else 2,
            args[2] if len(args) > 2 else "gunicorn-sync",
        )
    )
