"""Thresholds a team declares in its scenario file (issue 39 item 1, a first part): met,
missed and too close to call by the interval, in the answer, JUnit and the exit code."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from djbench.plan import scenarios
from djbench.reports import answer_words as answer
from djbench.reports import ci_outputs
from djbench.reports.threshold_words import said
from djbench.results.model import Capacity
from djbench.verdicts import thresholds
from djbench.verdicts.runs import load_run
from tests.resultfiles import PLAN, entry, write

FILE = """
version = 1
health_path = "/api/sync/health"
thresholds = {{ p99_ms = {default_p99}, error_rate = 0.01 }}

[[scenario]]
name = "health-sync"
path = "/api/sync/health"
expect = {{ status = 200, json = "object", keys = ["status"] }}
{own}
"""


def scenario_file(tmp_path: Path, default_p99: float = 500, own: str = "") -> Path:
    path = tmp_path / "s.toml"
    path.write_text(FILE.format(default_p99=default_p99, own=own))
    return path


def test_a_scenario_s_own_thresholds_override_the_file_s(tmp_path: Path) -> None:
    [s] = scenarios.load(scenario_file(tmp_path, own="thresholds = { p99_ms = 5 }")).scenarios
    assert s.thresholds.declared() == {"p99_ms": 5.0, "error_rate": 0.01}
    plain = scenarios.load(scenario_file(tmp_path)).scenarios[0]
    assert plain.fingerprint() == s.fingerprint()  # what is asked, not what is measured
    bad = scenario_file(tmp_path, own="thresholds = { p99 = 5 }")
    with pytest.raises(scenarios.ScenarioError, match=r"thresholds\.p99: unknown key"):
        scenarios.load(bad)


@pytest.mark.parametrize(
    ("values", "limit", "verdict"),
    [
        ([10.0, 10.5, 9.8, 10.2], 20.0, "met"),
        ([10.0, 10.5, 9.8, 10.2], 5.0, "missed"),
        ([10.0, 10.5, 9.8, 10.2], 10.1, "too close"),
        ([10.0], 100.0, "too close"),  # one trial: no interval, never decided
    ],
)
def test_a_threshold_is_decided_by_the_interval(
    values: list[float], limit: float, verdict: str
) -> None:
    check = thresholds.at_most("p99_ms", limit, values)
    assert check.verdict == verdict, said(check)


def test_the_error_rate_uses_wilson_s_interval() -> None:
    assert thresholds.error_rate_at_most(0.01, 0, 10_000).verdict == "met"
    assert thresholds.error_rate_at_most(0.01, 0, 50).verdict == "too close"  # 0 of 50
    assert thresholds.error_rate_at_most(0.01, 300, 10_000).verdict == "missed"
    text = said(thresholds.error_rate_at_most(0.01, 300, 10_000))
    assert text.startswith("error rate 3.00% [") and text.endswith("> 1.00%")


def test_misses_are_in_the_answer_and_junit(tmp_path: Path) -> None:
    meta = {**PLAN["scenarios"]["movies-sync"], "thresholds": {"p99_ms": 10.0}}
    run = load_run(
        write(
            tmp_path,
            "t",
            [
                entry("gunicorn-sync", "movies-sync", [700.0, 720.0, 710.0], p99=20.0),
                entry("uwsgi", "movies-sync", [800.0, 820.0, 810.0], p99=5.0),
            ],
            scenarios={"movies-sync": meta},
        )
    )
    said = "\n".join(answer.lines(run))
    # Equal trials: an interval of no width, so each side is decided.
    assert "Thresholds (95% intervals): 1 met, 1 missed, 0 too close to call" in said
    assert "  missed: gunicorn-sync movies-sync: p99 20.0 ms [20.0-20.0] > 10 ms" in said
    root = ET.fromstring(ci_outputs.junit_xml([run]))
    names = [c.get("name") for c in root.iter("testcase")]
    assert "gunicorn-sync p99_ms <= 10" in names and "uwsgi p99_ms <= 10" in names


@pytest.mark.servers
def test_p99_at_most_1_ms_on_health_sync_is_missed_with_exit_1(
    live_database: str, tmp_path: Path, one_pass: None
) -> None:
    out = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(
            "runbench", "--servers", "gunicorn-sync", "--scenario-file",
            str(scenario_file(tmp_path, own="thresholds = { p99_ms = 1 }")),
            "--trials", "3", "--duration", "0.8", "--warmup", "0.3", "--ws-idle", "0",
            "--no-setup", "--output", str(tmp_path / "out"),
            "--junit", str(tmp_path / "junit.xml"), "--summary", str(tmp_path / "summary.md"),
            "--bmf", str(tmp_path / "bmf.json"), stdout=out,
        )  # fmt: skip
    assert caught.value.returncode == 1
    message = str(caught.value)
    assert message.startswith("1 threshold(s) missed: gunicorn-sync health-sync: p99 ")
    assert message.endswith("> 1 ms") and "\n" not in message
    text = out.getvalue()
    assert "Thresholds (95% intervals): 1 met, 1 missed" in text  # the error rate met
    assert "  missed: gunicorn-sync health-sync: p99 " in text
    # The files CI reads, written at the end of the same run (issue 39 item 2).
    for name in ("Summary", "JUnit", "BMF"):
        assert f"{name}: {tmp_path}" in text
    failures = ET.parse(tmp_path / "junit.xml").getroot().iter("failure")
    [failure] = ET.parse(tmp_path / "junit.xml").getroot().iter("failure")
    assert [f.get("type") for f in failures] == ["threshold"]
    assert (
        "reproduce: python manage.py runbench --servers gunicorn-sync --scenarios health-sync"
        in (failure.text or "")
    )
    assert list(json.loads((tmp_path / "bmf.json").read_text())) == [
        "health-sync gunicorn-sync c32"
    ]
    summary = (tmp_path / "summary.md").read_text()
    assert "```text\nAnswer:" in summary and "| **missed** |" in summary


def capacity(rps: float | None, bracket: tuple[float, float] | None, **more: object) -> Capacity:
    return Capacity(
        slo_p99_ms=100, max_error_rate=0.01, resolution=0.05, rps=rps, bracket=bracket,
        server_cpus=2, **more,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("found", "limit", "verdict", "words"),
    [
        (capacity(1800.0, (1800.0, 1900.0)), 800, "met", "(search bracket [900.0-950.0]) >= 800"),
        (capacity(1800.0, (1800.0, 1900.0)), 1000, "missed", "< 1000"),  # 950 per core failed
        (capacity(1800.0, (1800.0, 2400.0)), 1000, "too close", "too close to call against"),
        (capacity(4000.0, None, stopped="ceiling"), 1000, "met", "[2,000.0-no failure]"),
        (capacity(None, (0.0, 50.0), stopped="never_passed"), 800, "missed", "< 800"),
        # Nothing confirmed is never a pass, whatever the bracket says.
        (capacity(None, (1800.0, 1900.0), stopped="unconfirmed"), 800, "too close", ""),
    ],
)
def test_capacity_per_core_is_judged_by_the_search_bracket(
    found: Capacity, limit: float, verdict: str, words: str
) -> None:
    check = thresholds.capacity_at_least(limit, found)
    assert check is not None and check.verdict == verdict, said(check)
    assert words in said(check)
    assert said(check).startswith("capacity per core ")


def test_a_tuning_s_screening_bracket_is_no_capacity_to_judge() -> None:
    screening = capacity(None, (1.0, 2.0), stopped="screening")
    assert thresholds.capacity_at_least(1.0, screening) is None


def test_a_windowed_rate_s_interval_is_never_narrower_than_one_answer_per_window() -> None:
    """Two 1 s windows of a 105 ms page that both counted 12 answers: not an interval
    of no width (the six-page startproject site printed [12-12]); at thousands of req/s
    in 2 s windows the resolution changes nothing."""
    from djbench.verdicts.thresholds import t_interval

    assert t_interval([12.0, 12.0]) == pytest.approx((12.0, 12.0))
    floored = t_interval([12.0, 12.0], steps=[1.0, 1.0])
    assert floored == pytest.approx((9.67, 14.9), abs=0.01)
    wide = t_interval([5000.0, 5200.0, 4900.0])
    assert t_interval([5000.0, 5200.0, 4900.0], steps=[0.5, 0.5, 0.5]) == wide
