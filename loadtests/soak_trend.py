"""How often the soak trend says "grows" when nothing grows, and whether it catches a leak.

    python loadtests/soak_trend.py [--runs 2000] [--record RESULTS.json]

Null series are AR(phi) noise (phi 0, 0.9, 0.99) with the noise scale and the reading
interval of recorded soaks (tests/fixtures/series/soak-pss.json: the PSS time lines of
real soaks on this machine); a leak adds 20 MB/h to the same noise. Each series is as
long as a 10-minute soak. Prints, per noise model, the share of false "grows" and of
leaks caught by djbench.verdicts.engine.stats.trend at its default threshold.

--record RESULTS.json: write the PSS time lines of a --soak run's results file into the
fixture instead (what the simulation's noise scale is taken from).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from djbench.results.store import load
from djbench.verdicts.engine import stats

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "series" / "soak-pss.json"
LEAK_MB_H = 20.0
SOAK_S = 600.0


def record(results: Path) -> None:
    document = load(results)
    lines = {}
    for entry in document.results:
        for trial in entry.trials:
            if trial.timeline and trial.timeline.memory:
                lines[f"{entry.label} {entry.scenario}"] = [
                    [m.t, m.pss] for m in trial.timeline.memory
                ]
    FIXTURE.write_text(
        json.dumps({"source": f"{document.run_id} ({results.name})", "pss": lines}, indent=1) + "\n"
    )
    print(f"wrote {len(lines)} time line(s) to {FIXTURE}")


def noise_of(fixture: dict[str, object]) -> tuple[float, float]:
    """The largest residual sd (MB) around a line, and the median reading interval (s)."""
    sds, steps = [], []
    for points in fixture["pss"].values():  # type: ignore[attr-defined]
        t = np.array([p[0] for p in points])
        v = np.array([p[1] for p in points])
        keep = t >= t[0] + 0.2 * (t[-1] - t[0])
        slope, intercept = np.polyfit(t[keep], v[keep], 1)
        sds.append(float(np.std(v[keep] - (slope * t[keep] + intercept), ddof=2)))
        steps.append(float(np.median(np.diff(t))))
    return max(sds), float(np.median(steps))


def ar(rng: np.random.Generator, n: int, phi: float, sd: float) -> np.ndarray:
    """AR(phi) with stationary standard deviation sd (started from its stationary law)."""
    shocks = rng.normal(0.0, sd * np.sqrt(1 - phi**2), n)
    x = np.empty(n)
    x[0] = rng.normal(0.0, sd)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + shocks[i]
    return x


def simulate(runs: int, sd: float, step: float, seed: int = 1) -> dict[float, tuple[float, float]]:
    """phi -> (share of false "grows", share of 20 MB/h leaks caught)."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, SOAK_S, step)
    found = {}
    for phi in (0.0, 0.9, 0.99):
        false = caught = 0
        for _ in range(runs):
            noise = 100.0 + ar(rng, len(t), phi, sd)
            false += stats.trend(list(zip(t, noise, strict=True)))["verdict"] == "grows"
            leak = noise + t / 3600 * LEAK_MB_H
            caught += stats.trend(list(zip(t, leak, strict=True)))["verdict"] == "grows"
        found[phi] = (false / runs, caught / runs)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--record", type=Path)
    args = parser.parse_args()
    if args.record:
        record(args.record)
        return
    fixture = json.loads(FIXTURE.read_text())
    sd, step = noise_of(fixture)
    print(f"noise from {fixture['source']}: residual sd {sd:.3f} MB, a reading every {step:g} s")
    for scale in (1.0, 2.0):
        for phi, (false, caught) in simulate(args.runs, sd * scale, step).items():
            print(
                f"sd {sd * scale:.3f} MB, AR({phi:g}): false grows {false:.1%}, "
                f"{LEAK_MB_H:g} MB/h leak caught {caught:.1%} ({args.runs} runs of {SOAK_S:.0f} s)"
            )


if __name__ == "__main__":
    main()
