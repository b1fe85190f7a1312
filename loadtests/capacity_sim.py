"""Capacity by simulation: djbench's own search, staircase and fit on a simulated queue.

    python -m loadtests.capacity_sim                 # 300 pairs of searches, seed 1
    python -m loadtests.capacity_sim --runs 1000 --noise 0.15

The server is a D/M/1 queue: requests sent at a constant rate, as the builtin driver's
open loop sends them, exponential service at MU req/s. Its response time is exponential
with rate MU (1 - sigma), sigma the root of sigma = exp(-MU (1 - sigma) / rate) (G/M/1),
so its steady-state p99 is ln(100) / (MU (1 - sigma)) and the capacity at the target is
exactly known (TRUE below). Each window draws its own service rate, MU x exp(N(0, noise)) (the
window-to-window noise of a shared machine: 5-15% here), and simulates every request
of its warm-up and window (Lindley's recursion, vectorised): its p99 is the sample's,
its slices' p50 feed the rising-latency check. Search windows are the run's short ones
(2 s after 0.5 s), steady windows 10 s after 5 s, as `--capacity` runs them.

Printed: the share of searches whose interval covers the true capacity (asked: at least
90%), the share of identical pairs tied by the likelihood-ratio test (asked: at least
95%), the share that report more than the server sustains (the estimate above the true
capacity by more than the noise's median effect), and the mean windows per search.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np

from djbench.results.model import Capacity, CapacityStep, LoadPoint
from djbench.verdicts import capacity_fit
from djbench.verdicts import capacity_search as capacity_stats

MU = 1000.0  # req/s
SLO_MS = 20.0
_DECAY = math.log(100) / (SLO_MS / 1000)  # MU (1 - sigma) at the target
TRUE = _DECAY / -math.log(1 - _DECAY / MU)  # 879.6 req/s


def window(rng: np.random.Generator, rate: float, mu: float, warmup: float, length: float
           ) -> tuple[float, list[LoadPoint], float]:  # fmt: skip
    """One open-loop window: its p99 (ms), one-second slices, achieved req/s."""
    count = int(rate * (warmup + length))
    gaps = np.full(count, 1 / rate)
    service = rng.exponential(1 / mu, count)
    arrivals = np.cumsum(gaps)
    # Lindley: wait_n = U_n - min(0, min_k<=n U_k), U_n = sum_{i<n} (service_i - gap_{i+1})
    u = np.concatenate(([0.0], np.cumsum(service[:-1] - gaps[1:])))
    wait = u - np.minimum(0.0, np.minimum.accumulate(u))
    done = arrivals + wait + service
    keep = (arrivals >= warmup) & (done <= warmup + length + 1.0)
    latency = (wait + service)[keep] * 1000
    if latency.size == 0:
        return math.inf, [], 0.0
    slices = []
    for k in range(int(length)):
        inside = latency[(arrivals[keep] >= warmup + k) & (arrivals[keep] < warmup + k + 1)]
        if inside.size:
            slices.append(LoadPoint(t=k, seconds=1.0, requests=int(inside.size), errors=0,
                                    p50_ms=float(np.median(inside))))  # fmt: skip
    achieved = float(np.sum(keep)) / length
    return float(np.percentile(latency, 99)), slices, achieved


def server(rng: np.random.Generator, noise: float) -> capacity_stats.Measure:
    def measure(rate: float, phase: capacity_stats.Phase) -> CapacityStep:
        mu = MU * math.exp(rng.normal(0, noise))
        warmup, length = (0.5, 2.0) if phase == "search" else (5.0, 10.0)
        p99, slices, achieved = window(rng, rate, mu, warmup, length)
        outcome = capacity_stats.judge(
            rate, achieved, p99, 0.0, 0.0, False, SLO_MS, 0.01, length,
            phase == "steady" and capacity_stats.rising(slices),
        )  # fmt: skip
        return CapacityStep(
            phase=phase, offered=rate, achieved=achieved, connections=8, passed=outcome.passed,
            why=outcome.why, p99_ms=p99, window_s=length,
        )  # fmt: skip

    return measure


def searched(measure: capacity_stats.Measure, repeats: int) -> Capacity:
    found = capacity_stats.search(measure, SLO_MS, 0.01, time.monotonic() + 3600)
    for _ in range(repeats - 1):
        capacity_stats.staircase(found, measure, time.monotonic() + 3600)
    return found


def steady(found: Capacity) -> list[capacity_fit.Window]:
    return [(s.offered, s.passed) for s in capacity_stats.steady_steps(found)]


def table(runs: int, seed: int, noise: float, repeats: int = capacity_stats.REPEATS,
          say: Callable[[str], None] = print) -> dict[str, float]:  # fmt: skip
    rng = np.random.default_rng(seed)
    covered = tied = over = unbounded = 0
    windows = 0
    for _ in range(runs):
        a, b = searched(server(rng, noise), repeats), searched(server(rng, noise), repeats)
        low, high = a.interval or (None, None)
        covered += (low or 0.0) <= TRUE <= (high or math.inf) and a.rps is not None
        unbounded += a.rps is None or low is None or high is None
        over += (a.rps or 0.0) > TRUE * math.exp(noise)
        tied += capacity_fit.tied(steady(a), steady(b)) is not False
        windows += len(a.steps)
    found = {
        "covered": covered / runs, "tied": tied / runs, "over": over / runs,
        "unbounded": unbounded / runs, "windows": windows / runs,
    }  # fmt: skip
    say(f"capacity on a simulated D/M/1 queue (true {TRUE:.1f} req/s at p99 <= {SLO_MS:g} ms), "
        f"window noise {noise:.0%}, {repeats} repeat(s), {runs} searches, seed {seed}")  # fmt: skip
    say(f"  interval covers the true capacity: {found['covered']:.1%} (asked >= 90%)")
    say(f"  identical pairs tied:              {found['tied']:.1%} (asked >= 95%)")
    say(f"  estimate above true x e^noise:      {found['over']:.1%}")
    say(f"  no capacity or an open interval:   {found['unbounded']:.1%}")
    say(f"  windows per search:                {found['windows']:.1f}")
    return found


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--noise", type=float, default=0.10)
    parser.add_argument("--repeats", type=int, default=capacity_stats.REPEATS)
    args = parser.parse_args()
    table(args.runs, args.seed, args.noise, args.repeats)
