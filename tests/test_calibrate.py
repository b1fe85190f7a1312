"""benchcalibrate's agreement statistics, on made-up series (its figures are measured by
the command itself, never asserted)."""

from __future__ import annotations

import random

from djbench.measure.calibrate import Figures, _paired_line, _say_paired


def test_the_agreement_pairs_rounds_and_divides_out_the_servers_cpu() -> None:
    # The machine drifts by 30% from round to round; in every round the new side reads 2%
    # low because the server got 2% less CPU, not because its requests cost more.
    rng = random.Random(1)
    level = [1000 * rng.uniform(0.7, 1.0) for _ in range(20)]
    base = Figures("independent wrk", level, server_cpu=[99.0] * 20)
    new = Figures("runbench (builtin)", [x * 0.98 for x in level], server_cpu=[99.0 * 0.98] * 20)
    line = _paired_line("builtin / wrk", new, base)
    assert line["ratio"] == 0.98 and line["ci95"] == [0.98, 0.98]  # paired: drift cancels
    assert line["per_cpu_ratio"] == 1.0 and line["rounds"] == 20
    assert "median of round ratios 0.980 [95% interval 0.980-0.980]" in _say_paired(line)


def test_too_few_rounds_say_so_and_a_side_without_cpu_is_left_out() -> None:
    base = Figures("independent wrk", [100.0, 110.0], server_cpu=[98.0, 98.0])
    new = Figures("runbench (wrk)", [99.0, 108.0], server_cpu=[float("nan"), 97.0])
    line = _paired_line("wrk / wrk", new, base)
    assert line["ci95"] is None and line["rounds"] == 2
    assert line["new_server_cpu"] == 97.0  # the missing reading is not a zero
    assert "[too few rounds]" in _say_paired(line)
    assert line["per_cpu_ratio"] == round((108.0 / 97.0) / (110.0 / 98.0), 4)  # round 2 only
