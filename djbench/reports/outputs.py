"""What a run leaves beside its results file for people to read: the HTML report and
the Markdown guide, written by the run itself (benchreport and benchguide write the same
from any results file later). Reads the results file only, as every report does."""

from __future__ import annotations

from pathlib import Path

from djbench.reports import answer, guide, report
from djbench.results.analysis import load_run
from djbench.results.store import ResultsError


def report_path(results: Path) -> Path:
    return results.with_suffix(".html")


def guide_path(results: Path) -> Path:
    return results.with_suffix(".guide.md")


def write_beside(results: Path) -> list[str]:
    """Write both; the lines that say where, or why one could not be written (the
    results file stands either way)."""
    said = []
    try:
        run = load_run(results)
    except ResultsError as exc:
        return [f"Report and guide not written: {exc}"]
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
