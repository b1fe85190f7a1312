"""What CI reads (issue 39 item 2): the Markdown summary, JUnit XML and Bencher Metric
Format JSON, from recorded results files built through the model."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import xmlschema

from djbench.reports import ci_outputs
from djbench.reports.words import say
from djbench.results.model import (
    MatrixCheck,
    MatrixDocument,
    MatrixMetric,
    MatrixNoise,
    MatrixPair,
    MatrixVerdict,
)
from djbench.verdicts import matrix_verdicts as matrix
from djbench.verdicts.runs import load_run
from tests.resultfiles import UNDERSERVED, entry, write

BMF_SCHEMA = Path(__file__).parent / "fixtures" / "bmf.schema.json"
JUNIT = xmlschema.XMLSchema(Path(__file__).parent / "fixtures" / "junit.xsd")


def sample(tmp_path: Path):  # type: ignore[no-untyped-def]
    return load_run(
        write(
            tmp_path,
            "ci",
            [
                entry("gunicorn-sync", "health-sync", [2900.0, 2950.0, 2920.0], p99=12.0),
                entry("uwsgi", "health-sync", [3700.0, 3790.0, 3750.0], warnings=[UNDERSERVED]),
                entry("uwsgi", "movies-sync", [], status="invalid", reason="31 requests timed out"),
                entry("gunicorn-gevent", "movies-async", [], status="incompatible", reason="x"),
            ],
        )
    )


def test_bmf_follows_bencher_s_schema_and_leaves_out_what_is_not_ranked(tmp_path: Path) -> None:
    found = json.loads(ci_outputs.bmf_json([sample(tmp_path)]))
    jsonschema.validate(found, json.loads(BMF_SCHEMA.read_text()))
    assert list(found) == ["health-sync gunicorn-sync c32"]  # uwsgi starved, then invalid
    measures = found["health-sync gunicorn-sync c32"]
    rps = measures["throughput"]
    assert rps["lower_value"] < rps["value"] < rps["upper_value"]
    assert measures["latency"]["value"] == 12.0 * 1e6  # p99 in nanoseconds, Bencher's unit
    assert measures["peak-pss-mib"]["value"] == 60.0


def test_junit_has_a_testcase_per_pair_and_fails_the_unranked(tmp_path: Path) -> None:
    text = ci_outputs.junit_xml([sample(tmp_path)])
    JUNIT.validate(text)
    root = ET.fromstring(text)
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "2", "1")
    assert len(cases) == 4
    by_name = {(c.get("classname", "").rsplit(".", 1)[-1], c.get("name")): c for c in cases}
    starved = by_name[("health-sync", "uwsgi")].find("failure")
    assert starved is not None and "connections" in (starved.get("message") or "")
    assert by_name[("movies-sync", "uwsgi")].find("failure") is not None
    assert by_name[("movies-async", "gunicorn-gevent")].find("skipped") is not None
    ok = by_name[("health-sync", "gunicorn-sync")]
    assert ok.find("failure") is None and "req/s [" in (ok.findtext("system-out") or "")


def test_the_summary_holds_the_answer_and_a_row_per_pair(tmp_path: Path) -> None:
    text = ci_outputs.summary_markdown([sample(tmp_path)])
    assert "```text\nAnswer:" in text
    rows = [line for line in text.splitlines() if line.startswith("| health-sync")]
    assert len(rows) == 2 and "| ok |" in rows[0]
    assert "&lt;" not in text and "&gt;" not in text


def test_a_matrix_s_worse_pair_is_a_junit_failure_and_bold_in_the_summary() -> None:
    document = MatrixDocument(
        matrix_id="m1",
        options=["runbench", "--matrix", "ref=a,b", "--servers", "gunicorn-sync"],
        axes={"ref": ["a", "b"]},
        base="ref=a",
        seed=1,
        rounds=6,
        verdicts=[
            MatrixVerdict(
                cell="ref=b",
                base="ref=a",
                counts={"worse": 1, "equivalent": 1},
                pairs=[
                    MatrixPair(
                        label="gunicorn-sync",
                        scenario="movies-sync",
                        verdict="worse",
                        metrics={"rps": MatrixMetric(verdict="worse", ratio=0.755, p=0.001)},
                    ),
                    MatrixPair(
                        label="gunicorn-sync",
                        scenario="health-sync",
                        verdict="equivalent",
                        metrics={"rps": MatrixMetric(verdict="equivalent", ratio=0.998, p=0.9)},
                    ),
                ],
            )
        ],
    )
    text = ci_outputs.matrix_junit_xml(document)
    JUNIT.validate(text)
    root = ET.fromstring(text)
    [suite] = root.findall("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    failed = [c for c in suite.findall("testcase") if c.find("failure") is not None]
    assert [c.get("classname") for c in failed] == ["djbench.matrix.ref=b.movies-sync"]
    reproduce = failed[0].findtext("failure") or ""
    assert (
        "rps x0.755" in reproduce and "reproduce: python manage.py runbench --matrix" in reproduce
    )
    summary = ci_outputs.matrix_summary_markdown(document)
    assert "| movies-sync | gunicorn-sync | **worse** | rps x0.755 p=0.001 |" in summary


CLOSE = MatrixCheck(
    cell="ref=b",
    label="gunicorn-sync",
    scenario="health-sync",
    metric="p99_ms",
    verdict="too close",
    limit=10.0,
    value=9.8,
    interval=(8.1, 11.9),
)


def open_matrix(on_inconclusive: str = "pass") -> MatrixDocument:
    """A gate that decided nothing about one pair and could not call one threshold."""
    return MatrixDocument(
        matrix_id="m2",
        axes={"ref": ["a", "b"]},
        base="ref=a",
        seed=1,
        rounds=6,
        on_inconclusive=on_inconclusive,  # type: ignore[arg-type]
        noise=MatrixNoise(rounds=6, sd=0.21, pairs=1, horizon=6, detectable=0.3),
        verdicts=[
            MatrixVerdict(
                cell="ref=b",
                base="ref=a",
                pairs=[
                    MatrixPair(
                        label="gunicorn-sync",
                        scenario="health-sync",
                        verdict="inconclusive",
                        metrics={
                            "rps": MatrixMetric(
                                verdict="inconclusive", ratio=0.95, ci=(0.8, 1.12), p=0.4
                            )
                        },
                        threshold=0.1,
                    )
                ],
            )
        ],
        checks=[CLOSE],
    )


def test_an_open_gate_is_not_a_pass_and_fails_when_asked() -> None:
    document = open_matrix()
    assert not matrix.failing(document).verdict_failed  # the default: exit 0, but said
    summary = ci_outputs.matrix_summary_markdown(document)
    assert "this runner's noise: sd 0.21" in summary and "flag a slowdown of 30%" in summary
    assert "Inconclusive: 1 of 1 pair(s) undecided after 6 round(s)" in summary
    assert "1 threshold(s) too close to call; not a pass: exit 0" in summary
    assert "inconclusive (max slowdown 10%)" in summary
    text = ci_outputs.matrix_junit_xml(document)
    JUNIT.validate(text)
    root = ET.fromstring(text)
    assert len(list(root.iter("skipped"))) == 2 and not list(root.iter("failure"))
    strict = open_matrix("fail")
    found = matrix.failing(strict)
    assert found.verdict_failed
    message = say(found.notice())
    assert "undecided" in message and "--on-inconclusive fail" in message
    root = ET.fromstring(ci_outputs.matrix_junit_xml(strict))
    assert [f.get("type") for f in root.iter("failure")] == ["inconclusive", "too-close"]


def test_a_cell_s_missed_threshold_fails_the_matrix() -> None:
    document = open_matrix()
    document.checks = [CLOSE.model_copy(update={"verdict": "missed"})]
    found = matrix.failing(document)
    assert found.verdict_failed
    assert "1 threshold(s) missed (ref=b gunicorn-sync health-sync: p99 " in say(found.notice())
    assert "threshold missed: ref=b gunicorn-sync health-sync" in (
        ci_outputs.matrix_summary_markdown(document)
    )


def test_a_cost_only_matrix_writes_its_summary_and_junit(tmp_path: Path) -> None:
    """--cost-only (the CI workflows' default) runs no wall-clock round: no cell has a
    results file, yet its cost verdicts are the gate's answer, so the summary and JUnit
    say them; only the BMF (each cell's figures) is left out, and said."""
    from djbench.reports.outputs import CiFiles, write_matrix_ci
    from djbench.results import store
    from djbench.results.cost_model import CostChange, CostComparison, MatrixCost
    from djbench.results.matrix_model import MatrixCell, MatrixDocument

    page = CostChange(
        scenario="movies-sync", verdict="worse", before=6.7e6, after=8.8e6, ratio=1.31
    )
    document = MatrixDocument(
        matrix_id="m",
        axes={"ref": ["HEAD~1", "HEAD"]},
        base="ref=HEAD~1",
        seed=1,
        cells=[MatrixCell(label=c, axes={}) for c in ("ref=HEAD~1", "ref=HEAD")],
        cost=MatrixCost(
            comparisons=[
                CostComparison(threshold=0.01, base="ref=HEAD~1", new="ref=HEAD", pages=[page])
            ]
        ),
    )
    path = tmp_path / "matrix.json"
    store.write_atomic(path, document)
    files = CiFiles(tmp_path / "summary.md", tmp_path / "junit.xml", tmp_path / "bmf.json")
    said = write_matrix_ci(path, files)
    assert said[:2] == [f"Summary: {files.summary}", f"JUnit: {files.junit}"]
    assert said[2].startswith("BMF not written (no cell ran wall-clock rounds)")
    assert "movies-sync" in (tmp_path / "summary.md").read_text()
    junit = (tmp_path / "junit.xml").read_text()
    JUNIT.validate(junit)
    assert [f.get("type") for f in ET.fromstring(junit).iter("failure")] == ["worse"]
    assert not (tmp_path / "bmf.json").exists()
