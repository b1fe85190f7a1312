"""Is there process-level luck? Two identical servers, several lifetimes each, several
windows a lifetime (issue 56, item 2: whether a lifetime must be treated as a block).

    .venv/bin/python loadtests/lifetime_luck.py [ROUNDS] [WINDOWS] [SERVER] [PAGE]
    (default 8 rounds, 4 windows, gunicorn-sync, movies-sync)

One runbench command on the sample project, nothing else changed: the page is written
WINDOWS times into a scenario file of its own (`PAGE-1` ... `PAGE-N`, the same request
and the same expected answer), and `--axis "SECRET_KEY=..."` with two keys makes two
deployments of one server that differ only in a setting the page never reads (a JSON
list: nothing is signed; runbench refuses a variable that changes no setting at all).
runbench starts each deployment once a round (a lifetime) and runs the copies in a
shuffled order in it, so each lifetime gives WINDOWS windows of the same page.

Per deployment, a one-way random-effects analysis of log req/s with the lifetime as the
group (windows nested in lifetimes): the F test of "lifetimes differ more than their
windows do", and the two variance components (between lifetimes, within a lifetime) as
standard deviations on the log scale (0.05 is about 5%). Then A/A as the race sees it:
the sd over rounds of log(A/B), each side its lifetime's mean, against what the
within-lifetime spread alone would give. Process-level luck is present when the F test
rejects and the between-lifetime sd is a fair share of the within one; then a lifetime
is the unit a test counts (its windows are not independent replicates).

Measured here 2026-12-07 (8 rounds x 4 windows of 2 s, gunicorn-sync, movies-sync, 4.3
min, nothing else running): lifetimes differ beyond their windows on both sides (F test
p = 0.001 and 1.5e-7); sd between lifetimes 0.025 and 0.038, within a lifetime 0.025
and 0.020; A/A sd of log(A/B) over rounds 0.028, where the within-lifetime spread alone
would give 0.016. A lifetime carries luck of its own (or the minutes between two of
them do): windows of one lifetime are not independent replicates, and restarting
lifetimes is what samples it.

Then what serving L rounds a lifetime would cost a verdict (issue 56, item 2: the time
saved on starts against the units lost), from this run's own figures. Measured here
2026-12-07 11:52 (same command, 4.7 min, a noisier hour: within a lifetime 0.11 and
0.13): F p = 0.005 and 0.001; luck not shared by the two sides sd 0.057; a lifetime's
own cost 1.6 s against 3.8 s a window; relative time to a verdict L=1 1.00, L=2 1.11,
L=3 1.25, L=4 1.40. One round a lifetime stays the design.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import tomli_w
from scipy import stats

from djbench.results.model import RunDocument
from djbench.results.store import load

ROOT = Path(__file__).resolve().parent.parent
KEYS = ("lifetime-luck-a-" + "x" * 40, "lifetime-luck-b-" + "y" * 40)


def scenario_file(page: str, copies: int, folder: Path) -> Path:
    """The sample's scenario file with `page` written `copies` times and nothing else."""
    sample = tomllib.loads((ROOT / "loadtests" / "default.toml").read_text())
    [found] = [s for s in sample["scenario"] if s["name"] == page]
    found.pop("checks", None)
    scenarios = [
        {**found, "name": f"{page}-{i}", "endpoint": f"{page}-{i}"} for i in range(1, copies + 1)
    ]
    out = {"version": 1, "health_path": sample["health_path"], "scenario": scenarios}
    path = folder / "luck.toml"
    path.write_text(tomli_w.dumps(out))
    return path


def components(groups: list[list[float]]) -> tuple[float, float, float]:
    """(p of the F test, sd between groups, sd within) of a one-way random-effects
    layout with equal group sizes."""
    k, m = len(groups), len(groups[0])
    grand = statistics.fmean(x for g in groups for x in g)
    means = [statistics.fmean(g) for g in groups]
    ms_between = m * sum((mu - grand) ** 2 for mu in means) / (k - 1)
    ms_within = sum((x - mu) ** 2 for g, mu in zip(groups, means, strict=True) for x in g) / (
        k * (m - 1)
    )
    p = float(stats.f.sf(ms_between / ms_within, k - 1, k * (m - 1)))
    between = max(0.0, (ms_between - ms_within) / m)
    return p, math.sqrt(between), math.sqrt(ms_within)


def main(rounds: int, windows: int, server: str, page: str) -> int:
    work = Path(tempfile.mkdtemp(prefix="djbench-luck-"))
    path = scenario_file(page, windows, work)
    command = [
        sys.executable, "manage.py", "runbench", "--servers", server,
        "--scenario-file", str(path), "--axis", f"SECRET_KEY={KEYS[0]},{KEYS[1]}",
        "--trials", str(rounds), "--duration", "2", "--warmup", "1", "--ws-idle", "0",
        "--output", str(work / "results"), "--no-color",
    ]  # fmt: skip
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if done.returncode not in (0, 1):
        print(done.stdout[-3000:], done.stderr[-3000:])
        return done.returncode
    [results] = sorted((work / "results").glob("*.json"))
    document = load(results)
    by_side: dict[str, dict[int, list[float]]] = {}
    for entry in document.results:
        side = by_side.setdefault(entry.label, {})
        for t in entry.trials:
            if t.valid and t.rps:
                side.setdefault(t.round, []).append(math.log(t.rps))
    print(f"{results}: {server}, {page} x {windows} windows a lifetime, {rounds} rounds")
    means: dict[str, dict[int, float]] = {}
    for label, lifetimes in sorted(by_side.items()):
        groups = [g for g in lifetimes.values() if len(g) == windows]
        if len(groups) < 2:
            print(f"  {label}: fewer than two whole lifetimes measured")
            return 1
        p, between, within = components(groups)
        means[label] = {r: statistics.fmean(g) for r, g in lifetimes.items() if len(g) == windows}
        print(
            f"  {label}: {len(groups)} lifetimes; F test p = {p:.3g}; sd between lifetimes "
            f"{between:.4f}, within a lifetime {within:.4f} (log req/s)"
        )
    a, b = sorted(means)
    shared = sorted(set(means[a]) & set(means[b]))
    diffs = [means[a][r] - means[b][r] for r in shared]
    within = statistics.fmean(
        [components([g for g in by_side[s].values() if len(g) == windows])[2] for s in (a, b)]
    )
    aa = statistics.stdev(diffs)
    print(
        f"  A/A over {len(shared)} rounds: sd of log(A/B), each side its lifetime's mean: "
        f"{aa:.4f}; from the within-lifetime spread alone: "
        f"{within * math.sqrt(2 / windows):.4f}"
    )
    overhead, window = timing(document)
    print(
        f"  a lifetime's own cost (start, idle readings, stop): {overhead:.2f} s; a window "
        f"with its warm-up and driver: {window:.2f} s"
    )
    spanning(aa, within, windows, overhead, window)
    return 0


def timing(document: RunDocument) -> tuple[float, float]:
    """(seconds a lifetime costs beyond its windows, seconds a window costs) in this run:
    its wall time less the windows' driver time, over its lifetimes (the gates' too)."""
    walls = [t.driver_wall_seconds for e in document.results for t in e.trials]
    windows_s = [w for w in walls if w]
    began = dt.datetime.fromisoformat(document.started or "")
    ended = dt.datetime.fromisoformat(document.finished or "")
    lifetimes = len(document.deployment_rounds) + len({e.label for e in document.results})
    rest = (ended - began).total_seconds() - sum(windows_s)
    return rest / lifetimes, statistics.median(windows_s)


def spanning(aa: float, within: float, windows: int, overhead: float, window: float) -> None:
    """What serving L rounds per lifetime would cost a verdict, relative to a lifetime a
    round (issue 56, item 2). Per pair and page, a lifetime is the unit a test counts
    (its rounds share its luck): the variance of one unit's log-ratio is 2 b^2 + 2 w^2 / L
    (b the luck of a lifetime the two sides do not share, from this A/A less its windows;
    w a window's spread), and a unit costs a lifetime plus L rounds of PAGES windows; the
    time to a verdict is proportional to their product."""
    pages = 3  # the default profile's scenarios in a lifetime
    luck = max(0.0, aa**2 - 2 * within**2 / windows) / 2
    print(
        f"  lifetime luck not shared by the two sides: sd {math.sqrt(luck):.4f}; a window's "
        f"spread {within:.4f}. Time to a verdict with L rounds a lifetime ({pages} pages), "
        "relative to one:"
    )
    cost = {
        rounds: (2 * luck + 2 * within**2 / rounds) * (overhead + rounds * pages * window)
        for rounds in (1, 2, 3, 4)
    }
    print("   " + "; ".join(f"L={r}: {c / cost[1]:.2f}" for r, c in cost.items()))


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(
        main(
            int(args[0]) if args else 8,
            int(args[1]) if len(args) > 1 else 4,
            args[2] if len(args) > 2 else "gunicorn-sync",
            args[3] if len(args) > 3 else "movies-sync",
        )
    )
