"""What a run leaves beside its results file for people to read: the HTML report and
the Markdown guide, written by the run itself (benchreport and benchguide write the same
from any results file later). Reads the results file only, as every report does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from djbench.reports import answer_words as answer
from djbench.reports import ci_outputs, cost_output, guide, report
from djbench.results import store
from djbench.results.store import ResultsError, load_matrix
from djbench.verdicts.runs import load_one, load_run, load_runs


def report_path(results: Path) -> Path:
    return results.with_suffix(".html")


def guide_path(results: Path) -> Path:
    return results.with_suffix(".guide.md")


def write_beside(results: Path) -> list[str]:
    """Write both; the lines that say where, or why one could not be written (the
    results file stands either way). A cost probe's file (runbench --cost) is read as
    such: its counts' report and its cost guide."""
    try:
        run = load_one(results)
    except ResultsError as exc:
        return [f"Report and guide not written: {exc}"]
    said = []
    for name, path, make in (
        ("Report", report_path(results), lambda: report.html([run])),
        ("Guide", guide_path(results), lambda: guide.markdown(run)),
    ):
        try:
            path.write_text(make(), encoding="utf-8")
        except OSError as exc:
            said.append(f"{name} not written ({exc.strerror or exc}): {path}")
            continue
        said.append(f"{name}: {path}")
    return said


def answer_lines(results: Path) -> list[str]:
    """The run's answer from its file; a line saying why when it cannot be read."""
    try:
        return answer.lines(load_run(results))
    except ResultsError as exc:
        return [f"No answer: {exc}"]


@dataclass(frozen=True)
class CiFiles:
    """--summary, --junit, --bmf: the files a CI system reads, where asked."""

    summary: Path | None = None
    junit: Path | None = None
    bmf: Path | None = None

    def asked(self) -> list[tuple[str, Path]]:
        found = (("Summary", self.summary), ("JUnit", self.junit), ("BMF", self.bmf))
        return [(name, path) for name, path in found if path is not None]


def _write(name: str, path: Path, make: Callable[[], str]) -> str:
    try:
        path.write_text(make(), encoding="utf-8")
    except OSError as exc:
        return f"{name} not written ({exc.strerror or exc}): {path}"
    return f"{name}: {path}"


def _write_asked(files: CiFiles, makers: dict[str, Callable[[], str]]) -> list[str]:
    return [_write(name, path, makers[name]) for name, path in files.asked()]


def write_ci(results: Path, files: CiFiles) -> list[str]:
    """A run's CI files from its results file; a line each saying where (or why not)."""
    if not files.asked():
        return []
    try:
        runs = [load_run(results)]
    except ResultsError as exc:
        return [f"CI files not written: {exc}"]
    return _write_asked(
        files,
        {
            "Summary": lambda: ci_outputs.summary_markdown(runs),
            "JUnit": lambda: ci_outputs.junit_xml(runs),
            "BMF": lambda: ci_outputs.bmf_json(runs),
        },
    )


def write_cost_ci(results: Path, files: CiFiles) -> list[str]:
    """A cost probe's CI files (runbench --cost): instructions per page."""
    if not files.asked():
        return []
    try:
        document = store.load(results, kind="cost")
    except ResultsError as exc:
        return [f"CI files not written: {exc}"]
    return _write_asked(
        files,
        {
            "Summary": lambda: cost_output.cost_summary(document),
            "JUnit": lambda: cost_output.cost_junit(document),
            "BMF": lambda: cost_output.cost_bmf(document),
        },
    )


def write_matrix_ci(matrix: Path, files: CiFiles) -> list[str]:
    """A matrix's CI files: its verdicts (summary, JUnit), every cell's figures (BMF). A
    matrix of cost only (--cost-only, the CI workflows' default) has verdicts and no
    cell's figures: its summary and JUnit are written, its BMF is not (said)."""
    if not files.asked():
        return []
    try:
        document = load_matrix(matrix)
    except ResultsError as exc:
        return [f"CI files not written: {exc}"]
    try:
        runs = load_runs(matrix)
    except ResultsError as exc:
        if document.cost is None:
            return [f"CI files not written: {exc}"]
        written = _write_asked(
            CiFiles(files.summary, files.junit),
            {
                "Summary": lambda: ci_outputs.matrix_summary_markdown(document),
                "JUnit": lambda: ci_outputs.matrix_junit_xml(document),
            },
        )
        unwritten = [f"BMF not written (no cell ran wall-clock rounds): {files.bmf}"]
        return written + (unwritten if files.bmf is not None else [])
    return _write_asked(
        files,
        {
            "Summary": lambda: ci_outputs.matrix_summary_markdown(document),
            "JUnit": lambda: ci_outputs.matrix_junit_xml(document),
            "BMF": lambda: ci_outputs.bmf_json(runs),
        },
    )
