"""runbench --cost: instructions per request under Valgrind, and their verdicts.

The live tests need Valgrind: they skip without it here and are required under CI=true
(.ci/run installs it). The verdict's rule is tested on made-up records (no Valgrind).
"""

from __future__ import annotations

import json
import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from djbench.measure import cost, sqlshape
from djbench.measure import server_cost as cost_servers
from djbench.plan import scenarios
from djbench.plan.project import current
from djbench.results import store
from djbench.results.model import CostRecord, PageCost, SeedCount
from djbench.verdicts.cost import compare


def need_valgrind() -> None:
    if cost.valgrind() is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("valgrind is not installed (CI=true: .ci/run installs it)")
        pytest.skip("valgrind is not installed (Debian: apt-get install valgrind)")


def _page(name: str, figures: list[float], shapes: dict[str, float] | None = None) -> PageCost:
    counts = [
        SeedCount(seed=i, instructions=f, per_segment=10, settled=True)
        for i, f in enumerate(figures)
    ]
    median = sorted(figures)[len(figures) // 2]
    return PageCost(
        scenario=name,
        interface="wsgi",
        counts=counts,
        instructions=median,
        spread=(max(figures) - min(figures)) / median,
        queries=sum((shapes or {}).values()),
        fingerprints=shapes or {},
        functions={"app/views.py:page": 1000.0},
    )


def _record(*pages: PageCost) -> CostRecord:
    return CostRecord(
        settled_within=0.002, max_segments=8, project_path_length=20, pages=list(pages)
    )


def test_a_change_beyond_threshold_and_spread_is_worse_and_one_within_is_equal() -> None:
    base = _record(_page("a", [1_000_000, 1_000_500, 1_001_000]), _page("b", [500_000] * 3))
    new = _record(_page("a", [1_025_000, 1_025_400, 1_026_000]), _page("b", [502_000] * 3))
    result = compare(base, new, threshold=0.01)
    a, b = result.pages
    assert (a.verdict, round(a.ratio or 0, 3)) == ("worse", 1.025)
    assert b.verdict == "equal"  # 0.4%: under the threshold
    assert [p.scenario for p in result.failing] == ["a"]


def test_seeds_that_disagree_make_a_change_above_the_threshold_equal() -> None:
    base = _record(_page("a", [1_000_000, 1_030_000, 1_060_000]))
    new = _record(_page("a", [1_040_000, 1_050_000, 1_040_000]))  # +4%, +1.9%, -1.9%
    [a] = compare(base, new, threshold=0.01).pages
    assert a.verdict == "equal" and a.noise == pytest.approx(0.0589, abs=1e-3)


def test_a_shift_every_seed_agrees_on_is_worse_under_a_wider_spread_of_seeds() -> None:
    """Paired by seed: the seeds' own counts spread 6%, each moved by +1.9 to +2%."""
    base = _record(_page("a", [1_000_000, 1_030_000, 1_060_000]))
    new = _record(_page("a", [1_020_000, 1_050_000, 1_080_000]))
    [a] = compare(base, new, threshold=0.01).pages
    assert a.verdict == "worse" and a.ratio == pytest.approx(1.0194, abs=1e-4)
    assert a.noise == pytest.approx(0.0011, abs=1e-4)


def test_one_added_query_is_a_finding_at_an_equal_cost() -> None:
    select = 'SELECT "t"."id" FROM "t" WHERE "t"."id" = %s'
    base = _record(_page("a", [1_000_000], {select: 1}))
    new = _record(_page("a", [1_000_000], {select: 1, 'SELECT COUNT(*) FROM "t"': 1}))
    [a] = compare(base, new).pages
    assert a.verdict == "equal" and a.queries_changed and a.failing
    assert a.sql_added == ['SELECT COUNT(*) FROM "t"'] and a.sql_removed == []


def test_sql_shapes_drop_literals_and_list_lengths() -> None:
    assert sqlshape.normalise("SELECT * FROM t WHERE id IN (%s, %s, %s) LIMIT 20") == (
        "SELECT * FROM t WHERE id IN (...) LIMIT ?"
    )
    assert sqlshape.normalise("SELECT  'it''s'  ,\n 3.5 FROM \"t2\"") == 'SELECT ? , ? FROM "t2"'


def test_without_valgrind_cost_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cost, "valgrind", lambda: None)
    with pytest.raises(CommandError) as caught:
        call_command("runbench", "--cost", stdout=StringIO())
    assert caught.value.returncode == 2 and "\n" not in str(caught.value)
    assert "apt-get install valgrind" in str(caught.value)


def test_cost_refuses_an_unknown_server_with_the_choices() -> None:
    with pytest.raises(CommandError) as caught:
        call_command("runbench", "--cost", "--servers", "nosuch", stdout=StringIO())
    assert caught.value.returncode == 2 and "\n" not in str(caught.value)
    assert "nosuch" in str(caught.value) and "gunicorn-sync" in str(caught.value)


def test_the_same_code_counted_twice_is_equal(tmp_path: Path) -> None:
    """Determinism: one page, one seed, two children: equal within 1e-5 (a few
    instructions of ~900,000 per request; the bound is far under a gate's 1%)."""
    need_valgrind()
    project = current()
    [page] = [s for s in scenarios.load(project.scenarios).scenarios if s.name == "health-sync"]
    [probe] = cost.probes([page])
    first, _ = cost.count(project, probe, 0, tmp_path / "one")
    second, _ = cost.count(project, probe, 0, tmp_path / "two")
    assert first.settled and second.settled
    assert first.instructions == pytest.approx(second.instructions, rel=1e-5)
    assert 300_000 < first.instructions < 5_000_000  # Django's handler, a JSON answer


@pytest.mark.servers
def test_runbench_cost_counts_a_sync_and_an_async_page(live_database: str, tmp_path: Path) -> None:
    """The job end to end on the sample: a WSGI page with its SQL, an ASGI page, a page
    whose status is wrong a finding of its own; the file compared with itself: equal
    pages, and the broken page fails the gate."""
    need_valgrind()
    bad = tmp_path / "scenarios.toml"
    source = current().scenarios.read_text()
    at = source.index('name = "health-async"')
    bad.write_text(source[:at] + source[at:].replace("status = 200", "status = 201", 1))
    out = tmp_path / "out"
    text = StringIO()
    call_command(
        "runbench", "--cost", "--cost-seeds", "1", "--no-setup", "--output", str(out),
        "--scenario-file", str(bad), "--scenarios", "movies-sync,movies-async,health-async",
        "--bmf", str(tmp_path / "bmf.json"), "--junit", str(tmp_path / "junit.xml"),
        "--summary", str(tmp_path / "summary.md"),
        stdout=text,
    )  # fmt: skip
    [path] = out.glob("*.json")
    document = store.load(path)
    assert document.kind == "cost" and document.cost is not None
    pages = {p.scenario: p for p in document.cost.pages}
    sync, not_ok = pages["movies-sync"], pages["health-async"]
    assert sync.status == "ok" and sync.queries == 2 and len(sync.fingerprints) == 2
    assert sync.counts[0].command is not None and "--tool=callgrind" in sync.counts[0].command.shell
    assert pages["movies-async"].interface == "asgi" and pages["movies-async"].status == "ok"
    assert (pages["movies-async"].instructions or 0) > (sync.instructions or 0)  # thread hops
    assert not_ok.status == "failed" and not_ok.reason is not None
    assert not_ok.reason.code == "cost_status" and not_ok.reason.params["got"] == 200
    assert "instructions per request" in text.getvalue()
    same = StringIO()
    with pytest.raises(CommandError) as caught:  # a page that fails under the probe fails
        call_command("benchcompare", str(path), str(path), stdout=same)
    assert caught.value.returncode == 1
    assert "movies-sync: equal, x1.0000" in same.getvalue()
    assert "health-async: failed" in same.getvalue()
    assert json.loads(path.read_text())["cost"]["seeds"] == [0]
    # What CI reads: BMF's instructions measure, a JUnit failure for the broken page.
    bmf = json.loads((tmp_path / "bmf.json").read_text())
    assert bmf["movies-sync cost"]["instructions"]["value"] == round(sync.instructions or 0, 2)
    assert bmf["movies-sync cost"]["sql-queries"]["value"] == 2
    assert "health-async cost" not in bmf
    junit = (tmp_path / "junit.xml").read_text()
    assert junit.count("<failure") == 1 and 'name="health-async"' in junit
    assert "| movies-sync | wsgi |" in (tmp_path / "summary.md").read_text()


def test_the_collectors_rhythm_settles_by_pairs_and_is_averaged() -> None:
    """Every other segment 1.5% costlier (the sample's garbage collector) never has two
    consecutive segments agree; two consecutive pairs do."""
    rhythm = [(1_000, 1)] + [(101_500 if i % 2 else 100_000, 100) for i in range(4)]
    assert not cost._settled(rhythm[:3]) and not cost._settled(rhythm[:4])
    assert cost._settled(rhythm)
    assert cost._figure(cost._last(rhythm)) == pytest.approx(1_007.5)


@pytest.mark.servers
def test_each_servers_own_cost_is_counted_beside_django_s_handler(
    live_database: str, tmp_path: Path
) -> None:
    """A WSGI and an ASGI server, each under Valgrind (N and 3N requests, differenced),
    less Django's handler in-process through the same interface; the report and the
    guide written beside the file show them."""
    if connection.vendor != "sqlite":
        pytest.skip("a trivial page, independent of the database: run in the SQLite pass only")
    need_valgrind()
    out = tmp_path / "out"
    text = StringIO()
    call_command(
        "runbench", "--cost", "--cost-seeds", "1", "--no-setup", "--output", str(out),
        "--scenarios", "health-sync", "--servers", "gunicorn-sync,uvicorn", stdout=text,
    )  # fmt: skip
    [path] = out.glob("*.json")
    document = store.load(path)
    assert document.cost is not None
    servers = {s.server: s for s in document.cost.servers}
    assert set(servers) == {"gunicorn-sync", "uvicorn"}
    for found in servers.values():
        assert found.status == "ok", found.reason
        assert found.per_request and found.handler
        assert len(found.totals) == 2 and found.totals[1] > found.totals[0]
        assert found.command is not None and "--trace-children=yes" in found.command.shell
    wsgi, asgi = servers["gunicorn-sync"], servers["uvicorn"]
    assert wsgi.own is not None and 0 < wsgi.own < (wsgi.per_request or 0)
    # Gunicorn's sync worker closes every connection: one per request, recorded.
    assert wsgi.connections == [cost_servers.REQUESTS + 1, 3 * cost_servers.REQUESTS + 1]
    assert asgi.own is None and asgi.connections == [1, 1]  # compared whole, keep-alive
    # Through ASGI the same sync view costs more in Django (its thread hops).
    assert (asgi.handler or 0) > (wsgi.handler or 0)
    assert "its own beyond Django's handler" in text.getvalue()
    report = path.with_suffix(".html").read_text()
    assert "The servers&#x27; own cost per request" in report or "servers' own cost" in report
    guide = StringIO()
    call_command("benchguide", str(path), stdout=guide)
    assert "gunicorn-sync spends" in guide.getvalue() and "uvicorn spends" in guide.getvalue()
