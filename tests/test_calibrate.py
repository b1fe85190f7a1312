"""benchcalibrate's agreement statistics, on made-up series (its figures are measured by
the command itself, never asserted)."""

from __future__ import annotations

import json
import os
import random
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from djbench.measure.calibrate import _say_paired
from djbench.measure.drivers import DRIVERS
from djbench.verdicts.calibration import Figures, paired_line


def test_the_agreement_pairs_rounds_and_divides_out_the_servers_cpu() -> None:
    # The machine drifts by 30% from round to round; in every round the new side reads 2%
    # low because the server got 2% less CPU, not because its requests cost more.
    rng = random.Random(1)
    level = [1000 * rng.uniform(0.7, 1.0) for _ in range(20)]
    base = Figures("independent wrk", level, server_cpu=[99.0] * 20)
    new = Figures("runbench (builtin)", [x * 0.98 for x in level], server_cpu=[99.0 * 0.98] * 20)
    line = paired_line("builtin / wrk", new, base)
    assert line["ratio"] == 0.98 and line["ci95"] == [0.98, 0.98]  # paired: drift cancels
    assert line["per_cpu_ratio"] == 1.0 and line["rounds"] == 20
    assert "median of round ratios 0.980 [95% interval 0.980-0.980]" in _say_paired(line)


def test_too_few_rounds_say_so_and_a_side_without_cpu_is_left_out() -> None:
    base = Figures("independent wrk", [100.0, 110.0], server_cpu=[98.0, 98.0])
    new = Figures("runbench (wrk)", [99.0, 108.0], server_cpu=[float("nan"), 97.0])
    line = paired_line("wrk / wrk", new, base)
    assert line["ci95"] is None and line["rounds"] == 2
    assert line["new_server_cpu"] == 97.0  # the missing reading is not a zero
    assert "[no 95% interval under 6 rounds]" in _say_paired(line)
    assert line["per_cpu_ratio"] == round((108.0 / 97.0) / (110.0 / 98.0), 4)  # round 2 only


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("nginx", "unknown server 'nginx'; valid: "),
        ("uvicorn:0", "workers must be a whole number from 1 to 64"),
        ("gunicorn-sync:four", "workers must be a whole number"),
    ],
)
def test_bad_agreement_targets_are_one_line(value: str, words: str) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("benchcalibrate", "--agreement-on", value, stdout=StringIO())
    assert caught.value.returncode == 2
    assert words in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.servers
def test_the_agreement_on_one_server_runs_its_three_sides(
    live_database: str, one_pass: None, tmp_path: Path
) -> None:
    """One round on uvicorn: runbench's two sides and the independent wrk each measured
    on the same server, the ratios and the server's CPU written."""
    if not DRIVERS["wrk"].available():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("wrk is not installed (CI=true: .ci/run installs it)")
        pytest.skip("wrk is not installed")
    out, report = StringIO(), tmp_path / "calibrate.json"
    call_command(
        "benchcalibrate", "--agreement-on", "uvicorn", "--trials", "1", "--duration", "0.5",
        "--json", str(report), stdout=out,
    )  # fmt: skip
    lines = json.loads(report.read_text())["agreement"]
    assert [line["name"] for line in lines] == [
        "runbench (builtin) / independent wrk, uvicorn x1",
        "runbench (wrk) / independent wrk, uvicorn x1",
    ]
    for line in lines:
        assert line["rounds"] == 1 and line["ratio"] > 0 and line["ci95"] is None
        assert line["new_server_cpu"] > 0 and line["base_server_cpu"] > 0
    assert "[no 95% interval under 6 rounds]" in out.getvalue()
