"""Outputs a CI system reads, from results files only: a Markdown summary (for
``$GITHUB_STEP_SUMMARY`` or a merge-request comment), JUnit XML (a testcase per pair,
per matrix verdict), and Bencher Metric Format JSON (https://bencher.dev/bmf.json: per
benchmark, measures with a value and, where djbench has one, the interval's bounds).

Hand-written, as small writers over the standard library's ElementTree and json: the
formats are a few elements and keys each, and the libraries that write them (junit-xml,
bencher's client) would add a dependency for less than this module.
"""

from __future__ import annotations

import json
import shlex
import xml.etree.ElementTree as ET
from typing import Any

from djbench.reports import answer_words as answer
from djbench.reports import threshold_words
from djbench.reports.cost_output import matrix_cost_junit, matrix_cost_summary
from djbench.reports.figures import rate
from djbench.reports.matrix_output import gate_lines, metric_text
from djbench.reports.words import md_cell, say
from djbench.results.model import MatrixDocument
from djbench.verdicts import thresholds
from djbench.verdicts.answer import finding
from djbench.verdicts.ranking import rps_interval, unfit
from djbench.verdicts.runs import Pair, Run

# BMF measures: Bencher's built-in slugs where one fits (throughput in operations per
# second, latency in nanoseconds), a slug of djbench's own for memory.
THROUGHPUT, LATENCY, MEMORY = "throughput", "latency", "peak-pss-mib"
OPEN = frozenset({"inconclusive", "too close"})  # a question the run left open


def benchmark_name(pair: Pair, tag: str = "") -> str:
    """One pair's stable name across runs: scenario, deployment, concurrency (and a
    matrix cell's label): a benchmark's history in Bencher is keyed by it."""
    name = f"{pair.scenario} {pair.label} c{pair.concurrency or '-'}"
    return f"{tag} {name}" if tag else name


def _metric(value: float, bounds: tuple[float, float] | None = None) -> dict[str, float]:
    found = {"value": round(value, 6)}
    if bounds is not None:
        found |= {"lower_value": round(bounds[0], 6), "upper_value": round(bounds[1], 6)}
    return found


def bmf(runs: list[Run]) -> dict[str, dict[str, dict[str, float]]]:
    """Every ranked pair's throughput (req/s with its 95% interval), p99 latency (ns)
    and peak PSS (MiB); pairs that may not be ranked are left out, as everywhere."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for run in runs:
        for pair in run.pairs:
            if not pair.ok or unfit(pair) is not None or (rps := pair.median("rps")) is None:
                continue
            measures = {THROUGHPUT: _metric(rps, rps_interval(pair))}
            if (p99 := pair.median("p99")) is not None:
                measures[LATENCY] = _metric(p99 * 1e6)
            if (pss := pair.memory("pss_peak")) is not None:
                measures[MEMORY] = _metric(pss)
            out[benchmark_name(pair, run.tag)] = measures
    return out


def bmf_json(runs: list[Run]) -> str:
    return json.dumps(bmf(runs), indent=2, sort_keys=True) + "\n"


def _pair_case(suite: ET.Element, run: Run, pair: Pair) -> bool:
    """One pair as a testcase: a failure when it may not be ranked (its own finding: a
    deployment ruled out on another scenario fails there), skipped when incompatible;
    True when it failed."""
    seconds = sum(t.duration_s or 0.0 for t in pair.entry.trials)
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"djbench.{run.run_tag}.{pair.scenario}",
        name=pair.label,
        time=f"{seconds:.3f}",
    )
    if pair.status == "incompatible":
        ET.SubElement(case, "skipped", message=f"incompatible: {say(pair.reason)}")
        return False
    found = unfit(pair)
    if found is None:
        rps = pair.median("rps") or 0.0
        bounds = rps_interval(pair)
        said = f"{rate(rps)} req/s" + (f" [{rate(bounds[0])}-{rate(bounds[1])}]" if bounds else "")
        ET.SubElement(case, "system-out").text = said
        return False
    why = say(found)
    kind = pair.status if pair.status != "ok" else "starved"
    failure = ET.SubElement(case, "failure", message=why, type=kind)
    command = pair.entry.command.get("server") if pair.entry.command else None
    failure.text = f"{why}\nserver: {command.shell}" if command is not None else why
    return True


def reproduce(run: Run, pair: Pair) -> str:
    """The runbench command that measures this one pair again (its server, front,
    scenario and connections; the run's scenario file and driver)."""
    argv = ["python", "manage.py", "runbench", "--servers", pair.server]
    argv += ["--scenarios", pair.scenario]
    if pair.proxy != "none":
        argv += ["--proxy", pair.proxy]
    if pair.protocol != "h1":
        argv += ["--protocol", pair.protocol]
    if pair.concurrency:
        argv += ["--concurrency", str(pair.concurrency)]
    if run.plan.scenario_file:
        argv += ["--scenario-file", run.plan.scenario_file]
    if run.plan.driver:
        argv += ["--driver", run.plan.driver]
    return shlex.join(argv)


def _threshold_case(suite: ET.Element, run: Run, pair: Pair, check: thresholds.Check) -> bool:
    """A threshold as a testcase: a failure when missed, skipped when too close to call
    (an inconclusive check is not a pass); True when it failed."""
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"djbench.{run.run_tag}.thresholds.{pair.scenario}",
        name=f"{pair.label} {check.metric} <= {check.limit:g}",
    )
    said = threshold_words.said(check)
    if check.verdict == "missed":
        failure = ET.SubElement(case, "failure", message=said, type="threshold")
        failure.text = f"{said}\nreproduce: {reproduce(run, pair)}"
        return True
    if check.verdict == "too close":
        ET.SubElement(case, "skipped", message=said)
    else:
        ET.SubElement(case, "system-out").text = said
    return False


def junit_xml(runs: list[Run]) -> str:
    """A testsuite per run, a testcase per pair (the pair's figure in its output)."""
    root = ET.Element("testsuites", name="djbench")
    for run in runs:
        suite = ET.SubElement(root, "testsuite", name=f"djbench run {run.run_id}")
        failures = sum(_pair_case(suite, run, p) for p in run.pairs)
        checks = thresholds.of_run(run)
        for pair, check in checks:
            failures += _threshold_case(suite, run, pair, check)
        skipped = sum(p.status == "incompatible" for p in run.pairs)
        skipped += sum(c.verdict == "too close" for _, c in checks)
        suite.set("tests", str(len(run.pairs) + len(checks)))
        suite.set("failures", str(failures))
        suite.set("skipped", str(skipped))
    return _xml(root)


def matrix_junit_xml(document: MatrixDocument) -> str:
    """A testsuite per compared cell, a testcase per pair's verdict against the base:
    "worse" is a failure, a cell that could not run an error."""
    root = ET.Element("testsuites", name=f"djbench matrix {document.matrix_id}")
    for cell in document.cells:
        if cell.status != "ok":
            suite = ET.SubElement(root, "testsuite", name=cell.label, tests="1", errors="1")
            case = ET.SubElement(suite, "testcase", classname="djbench.matrix", name=cell.label)
            ET.SubElement(case, "error", message=cell.reason or "the cell could not run")
    for verdict in document.verdicts:
        suite = ET.SubElement(root, "testsuite", name=f"{verdict.cell} vs {verdict.base}")
        worse = 0
        for pair in verdict.pairs:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"djbench.matrix.{verdict.cell}.{pair.scenario}",
                name=pair.label,
            )
            said = f"{pair.verdict}: " + "; ".join(
                f"{k} {metric_text(v)}" for k, v in pair.metrics.items()
            )
            worse += _verdict_outcome(case, pair.verdict, said, document.on_inconclusive)
            if (failure := case.find("failure")) is not None:
                failure.text = f"{said}\nreproduce: {matrix_command(document)}"
        suite.set("tests", str(len(verdict.pairs)))
        suite.set("failures", str(worse))
        suite.set("skipped", str(len(suite.findall("testcase/skipped"))))
    if document.checks:
        _matrix_checks(root, document)
    matrix_cost_junit(root, document.cost)
    return _xml(root)


def matrix_command(document: MatrixDocument) -> str:
    """The matrix as it was asked (every cell, both sides in every round)."""
    argv = document.options or ["runbench"]
    return shlex.join(["python", "manage.py", *argv])


def _verdict_outcome(case: ET.Element, verdict: str, said: str, on_inconclusive: str) -> bool:
    """Worse fails; an open question is skipped (not a pass), or fails under
    --on-inconclusive fail; True when it failed."""
    if verdict == "worse" or (verdict in OPEN and on_inconclusive == "fail"):
        ET.SubElement(case, "failure", message=said, type=verdict.replace(" ", "-")).text = said
        return True
    if verdict in OPEN:
        ET.SubElement(case, "skipped", message=said)
    else:
        ET.SubElement(case, "system-out").text = said
    return False


def _matrix_checks(root: ET.Element, document: MatrixDocument) -> None:
    """The scenario file's thresholds, a testcase per cell, pair and threshold."""
    suite = ET.SubElement(root, "testsuite", name="thresholds", tests=str(len(document.checks)))
    failures = 0
    for check in document.checks:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"djbench.matrix.{check.cell}.thresholds.{check.scenario}",
            name=f"{check.label} {check.metric}",
        )
        verdict = {"missed": "worse", "too close": "too close"}.get(check.verdict, "met")
        failures += _verdict_outcome(
            case, verdict, threshold_words.said(check), document.on_inconclusive
        )
    suite.set("failures", str(failures))
    suite.set("skipped", str(len(suite.findall("testcase/skipped"))))


def _xml(root: ET.Element) -> str:
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def summary_markdown(runs: list[Run]) -> str:
    """The answer block, then a compact table of every pair (ranked first)."""
    out: list[str] = []
    for run in runs:
        out += [f"## djbench run {run.run_id}", "", "```text", *answer.lines(run), "```", ""]
        out += ["| scenario | deployment | req/s [95%] | p99 ms | peak PSS MiB | status |"]
        out += ["| --- | --- | --- | --- | --- | --- |"]
        ranked_first = sorted(
            run.pairs, key=lambda p: (p.scenario, unfit(p) is not None, -(p.median("rps") or 0))
        )
        for pair in ranked_first:
            out.append(_summary_row(pair))
        out.append("")
        if checks := thresholds.of_run(run):
            out += ["| scenario | deployment | threshold | verdict |", "| --- | --- | --- | --- |"]
            out += [
                f"| {md_cell(p.scenario)} | {md_cell(p.label)} | "
                f"{md_cell(threshold_words.said(c))} "
                f"| {'**missed**' if c.verdict == 'missed' else c.verdict} |"
                for p, c in checks
            ]
            out.append("")
    return "\n".join(out)


def _summary_row(pair: Pair) -> str:
    rps, bounds = pair.median("rps"), rps_interval(pair)
    figure = "" if rps is None else rate(rps)
    if bounds is not None:
        figure += f" [{rate(bounds[0])}-{rate(bounds[1])}]"
    p99, pss = pair.median("p99"), pair.memory("pss_peak")
    status = (
        answer.finding_text(pair) if finding(pair) else "ok"
    )  # in a few words: the answer's own
    cells: list[Any] = [
        pair.scenario,
        pair.label,
        figure,
        "" if p99 is None else f"{p99:,.1f}",
        "" if pss is None else f"{pss:,.1f}",
        status,
    ]
    return "| " + " | ".join(md_cell(str(c)) for c in cells) + " |"


def matrix_summary_markdown(document: MatrixDocument) -> str:
    """Each cell against the base: its verdict counts, then a row per pair."""
    out = [
        f"## djbench matrix {document.matrix_id}",
        "",
        f"{document.rounds} paired round(s); threshold {document.threshold:.0%}, false "
        f"discovery rate {document.alpha:g} over every pair x metric x cell and the looks.",
        "",
    ]
    for cell in document.cells:
        if cell.status != "ok":
            out += [f"- **{md_cell(cell.label)} could not run**: {md_cell(cell.reason or '')}"]
    out += [f"- {md_cell(line)}" for line in gate_lines(document)]
    out += matrix_cost_summary(document.cost)
    for verdict in document.verdicts:
        counts = ", ".join(f"{n} {v}" for v, n in sorted(verdict.counts.items()))
        out += ["", f"### {md_cell(verdict.cell)} vs {md_cell(verdict.base)}: {counts}", ""]
        if verdict.level is not None:
            out += [
                f"Tested at this look's level {verdict.level:.3g} (alpha spent over the "
                f"looks): a pair is worse when its Benjamini-Hochberg p is below it and the "
                f"change beyond the threshold. The intervals are the equivalence test's "
                f"({1 - 2 * verdict.level:.1%}): one can exclude x1.000 while p is above "
                "the level.",
                "",
            ]
        out += [
            "| scenario | deployment | verdict | metrics (new/base) |",
            "| --- | --- | --- | --- |",
        ]
        for pair in verdict.pairs:
            metrics = "; ".join(f"{k} {metric_text(v)}" for k, v in pair.metrics.items())
            said = "**worse**" if pair.verdict == "worse" else pair.verdict
            if pair.threshold is not None:
                said += f" (max slowdown {pair.threshold:.0%})"
            names = f"{md_cell(pair.scenario)} | {md_cell(pair.label)}"
            out.append(f"| {names} | {said} | {md_cell(metrics)} |")
    if document.checks:
        out += ["", "### Thresholds", "", "| cell | scenario | deployment | threshold | verdict |"]
        out += ["| --- | --- | --- | --- | --- |"]
        out += [
            f"| {md_cell(c.cell)} | {md_cell(c.scenario)} | {md_cell(c.label)} | "
            f"{md_cell(threshold_words.said(c))} | "
            f"{'**missed**' if c.verdict == 'missed' else c.verdict} |"
            for c in document.checks
        ]
    return "\n".join(out) + "\n"
