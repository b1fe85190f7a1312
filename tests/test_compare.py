"""benchcompare on constructed runs with known answers, and on bad input."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from djbench.reports.compare import compare, min_p_value, trials_needed
from djbench.results.analysis import load_run
from tests.resultfiles import entry, write

BASE = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0]


def verdicts(
    tmp_path: Path, new_entries: list[dict], base_entries: list[dict] | None = None, **plan: object
) -> dict[tuple[str, str], str]:
    base = write(tmp_path, "base", base_entries or [entry("uwsgi", "movies-sync", BASE)])
    new = write(tmp_path, "new", new_entries, **plan)
    result = compare(load_run(base), load_run(new))
    return {(p.server, p.scenario): p.verdict for p in result.pairs}


def test_a_known_regression(tmp_path: Path) -> None:
    slower = [x * 0.8 for x in BASE]
    assert verdicts(tmp_path, [entry("uwsgi", "movies-sync", slower)]) == {
        ("uwsgi", "movies-sync"): "worse"
    }


def test_a_known_improvement(tmp_path: Path) -> None:
    faster = [x * 1.25 for x in BASE]
    assert verdicts(tmp_path, [entry("uwsgi", "movies-sync", faster)]) == {
        ("uwsgi", "movies-sync"): "better"
    }


def test_latency_and_memory_regressions_count(tmp_path: Path) -> None:
    base = [entry("uwsgi", "movies-sync", BASE, p99=20.0, pss=60.0)]
    assert (
        verdicts(tmp_path, [entry("uwsgi", "movies-sync", BASE, p99=30.0)], base)[
            ("uwsgi", "movies-sync")
        ]
        == "worse"
    )
    base_run = load_run(write(tmp_path, "b2", base))
    grown = load_run(write(tmp_path, "n2", [entry("uwsgi", "movies-sync", BASE, pss=80.0)]))
    [pair] = compare(base_run, grown).pairs
    assert pair.verdict == "worse"
    assert any("peak PSS" in r for r in pair.reasons)


def test_pure_noise_is_inconclusive(tmp_path: Path) -> None:
    noise = [1003.0, 994.0, 1008.0, 999.0, 991.0, 1006.0]
    assert verdicts(tmp_path, [entry("uwsgi", "movies-sync", noise)]) == {
        ("uwsgi", "movies-sync"): "inconclusive"
    }


def test_significant_but_small_is_inconclusive(tmp_path: Path) -> None:
    small = [x * 0.95 for x in BASE]  # every trial slower, but only by 5%
    base_run = load_run(write(tmp_path, "base", [entry("uwsgi", "movies-sync", BASE)]))
    new_run = load_run(write(tmp_path, "new", [entry("uwsgi", "movies-sync", small)]))
    [pair] = compare(base_run, new_run).pairs
    rps = next(m for m in pair.metrics if m.metric == "rps")
    assert rps.p_value is not None and rps.p_value < 0.01
    assert pair.verdict == "inconclusive"
    assert "within the 10% threshold" in rps.note


def test_too_few_trials_is_said(tmp_path: Path) -> None:
    base = [entry("uwsgi", "movies-sync", [1000.0, 1001.0, 999.0])]
    new = [entry("uwsgi", "movies-sync", [500.0, 501.0, 499.0])]  # halved, but 3 vs 3
    base_run = load_run(write(tmp_path, "base", base))
    new_run = load_run(write(tmp_path, "new", new))
    [pair] = compare(base_run, new_run).pairs
    assert pair.verdict == "inconclusive"
    rps = next(m for m in pair.metrics if m.metric == "rps")
    assert "too few trials (3 vs 3)" in rps.note and "run 5 per side" in rps.note
    assert min_p_value(3, 3) == pytest.approx(0.1)
    assert trials_needed(0.01) == 5  # exact test: 2 / C(10, 5) = 0.0079
    assert min_p_value(4, 4) > 0.01 > min_p_value(5, 5)


def test_non_comparable_pairs(tmp_path: Path) -> None:
    changed = [entry("uwsgi", "movies-sync", BASE, fingerprint="f2")]
    assert verdicts(tmp_path, changed) == {("uwsgi", "movies-sync"): "not comparable"}
    other_driver = verdicts(tmp_path, [entry("uwsgi", "movies-sync", BASE)], driver="builtin")
    assert other_driver == {("uwsgi", "movies-sync"): "not comparable"}
    only_new = verdicts(
        tmp_path, [entry("uwsgi", "movies-sync", BASE), entry("daphne", "movies-sync", BASE)]
    )
    assert only_new[("daphne", "movies-sync")] == "not comparable"


def test_correctness_regressions(tmp_path: Path) -> None:
    broke = [entry("uwsgi", "movies-sync", [], status="failed", reason="status 500")]
    assert verdicts(tmp_path, broke) == {("uwsgi", "movies-sync"): "worse"}
    reshaped = [entry("uwsgi", "movies-sync", BASE, shape="200 application/json {id:int}")]
    assert verdicts(tmp_path, reshaped) == {("uwsgi", "movies-sync"): "worse"}


def test_a_run_against_itself_reports_no_regression(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "same",
        [
            entry("uwsgi", "movies-sync", BASE),
            entry("uvicorn", "movies-sync", [400.0, 410.0, 405.0]),
        ],
    )
    out = StringIO()
    call_command("benchcompare", str(path), str(path), stdout=out)
    assert "2 inconclusive" in out.getvalue()


def command(*args: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("benchcompare", *args, stdout=out)
    except CommandError as exc:
        return exc.returncode, str(exc)
    return 0, out.getvalue()


def test_exit_codes_and_outputs(tmp_path: Path) -> None:
    base = write(tmp_path, "base", [entry("uwsgi", "movies-sync", BASE)])
    new = write(tmp_path, "new", [entry("uwsgi", "movies-sync", [x * 0.7 for x in BASE])])
    code, message = command(
        str(base),
        str(new),
        "--json",
        str(tmp_path / "c.json"),
        "--markdown",
        str(tmp_path / "c.md"),
    )
    assert (code, message) == (1, "1 pair(s) got worse")
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["counts"]["worse"] == 1
    assert data["pairs"][0]["metrics"][0]["ratio"] == pytest.approx(0.7, abs=0.01)
    assert "| uwsgi | movies-sync | 32 | **worse** |" in (tmp_path / "c.md").read_text()
    assert command(str(base), str(base))[0] == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not a djbench results file (not JSON)"),
        ('{"a": 1}', "is not a djbench results file (no schema_version)"),
        (
            '{"schema_version": 99, "results": []}',
            "has schema version 99; this djbench reads versions 1, 2",
        ),
        (
            '{"schema_version": 1, "kind": "benchmark", "results": []}',
            "holds no results (an empty run)",
        ),
        (
            '{"schema_version": 1, "kind": "verify", "results": [{}]}',
            "is a 'verify' file, not a benchmark run",
        ),
    ],
)
def test_bad_input_is_exit_2(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    good = write(tmp_path, "good", [entry("uwsgi", "movies-sync", BASE)])
    code, text = command(str(good), str(bad))
    assert code == 2 and message in text and "\n" not in text
    assert command(str(good), str(tmp_path / "missing.json"))[0] == 2


def test_a_memory_regression_with_ties_is_flagged_at_5_vs_5(tmp_path: Path) -> None:
    # Peak PSS is rounded, so trials tie: scipy's mannwhitneyu(method="auto") falls back
    # to the normal approximation there (p = 0.012, never below alpha = 0.01); the exact
    # permutation test gives 2/C(10,5) = 0.0079.
    rps = [1000.0, 1001.0, 1002.0, 1003.0, 1004.0]
    base = [entry("uwsgi", "movies-sync", rps, pss=[60.0, 60.0, 60.5, 61.0, 61.5])]
    new = [entry("uwsgi", "movies-sync", rps, pss=[80.0, 80.0, 80.5, 81.0, 81.5])]
    result = compare(load_run(write(tmp_path, "b", base)), load_run(write(tmp_path, "n", new)))
    [pair] = result.pairs
    memory = next(m for m in pair.metrics if m.metric == "pss_peak")
    assert memory.p_value == pytest.approx(2 / 252, abs=1e-5)
    assert memory.verdict == "worse" and pair.verdict == "worse"
    assert memory.ci is None  # 5 trials per side give no 95% interval


def test_many_pairs_are_corrected_for(tmp_path: Path) -> None:
    # One pair 15% slower with p = 0.0079 alone is a regression; tested among 12 pairs,
    # Holm's correction makes it inconclusive (0.0079 x 12 > 0.01).
    fives = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
    slower = [x * 0.85 for x in fives]
    servers = [f"s{i}" for i in range(12)]
    base = [entry(s, "movies-sync", fives) for s in servers]
    new = [entry("s0", "movies-sync", slower)] + [
        entry(s, "movies-sync", fives) for s in servers[1:]
    ]
    result = compare(load_run(write(tmp_path, "b", base)), load_run(write(tmp_path, "n", new)))
    first = next(p for p in result.pairs if p.server == "s0")
    rps = next(m for m in first.metrics if m.metric == "rps")
    assert rps.p_value == pytest.approx(2 / 252, abs=1e-5)
    assert rps.p_adjusted is not None and rps.p_adjusted > 0.01
    assert first.verdict == "inconclusive"
    assert "not significant after Holm's correction" in rps.note
    alone = compare(
        load_run(write(tmp_path, "b1", base[:1])), load_run(write(tmp_path, "n1", new[:1]))
    )
    assert alone.pairs[0].verdict == "worse"
