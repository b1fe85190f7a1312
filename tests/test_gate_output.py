"""The verify gate's console output for a site of many pages (issue 36's noticed: a
bakerydemo gate of 20 scenarios was a table of 20 columns, and its ASGI hops table
repeated one row per scenario)."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from djbench.reports.gate_output import MATRIX_COLUMNS, print_hops, print_matrix
from djbench.results.model import AsgiHops, ScenarioMeta
from tests.resultfiles import document, entry


def _printed(draw: object, doc: object) -> str:
    out = StringIO()
    draw(Console(file=out, width=100), doc)  # type: ignore[operator]
    return " ".join(out.getvalue().split())


def test_many_scenarios_are_counted_per_deployment_and_failures_named() -> None:
    names = [f"page-{i}" for i in range(MATRIX_COLUMNS + 4)]
    entries = [entry("uvicorn", n, [10.0]) for n in names]
    entries += [entry("gunicorn-sync", n, [10.0]) for n in names[1:]]
    broken = entry("gunicorn-sync", names[0], [], status="failed", reason="answered 500")
    entries.append(broken)
    meta = {n: ScenarioMeta(fingerprint="f", path=f"/{n}/") for n in names}
    printed = _printed(print_matrix, document("r", entries, scenarios=meta))
    assert "│ uvicorn │" in printed and "│ 12 │ 0 │ 0 │" in printed, printed
    assert "│ 11 │ 0 │ 1 │" in printed
    assert "failed: answered 500 1 deployment(s): gunicorn-sync (page-0)" in printed
    assert "page-11" not in printed  # no column per scenario


def test_scenarios_with_the_same_hops_share_a_row() -> None:
    same = AsgiHops(counted=True, hops=7, causes={"whitenoise.middleware.WhiteNoiseMiddleware": 2})
    meta = {f"page-{i}": ScenarioMeta(fingerprint="f", asgi_hops=same) for i in range(5)} | {
        "api": ScenarioMeta(fingerprint="f", asgi_hops=AsgiHops(counted=True, hops=3))
    }
    printed = _printed(print_hops, document("r", [], scenarios=meta))
    assert "page-0, page-1, page-2 and 2 more │ 7" in printed, printed
    assert "api │ 3" in printed
    assert printed.count("│ 7 │") == 1
