"""The answer a run ends with, and what no report may recommend (issue 35): recorded
results files, built through the model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from djbench.reports import answer_words as answer
from djbench.reports import guide, report, tradeoffs
from djbench.results.model import Notice, PairResult
from djbench.run import exits
from djbench.verdicts.ranking import efficient, flagged, rps_interval
from djbench.verdicts.runs import load_run
from tests.resultfiles import UNDERSERVED, entry, write


def starved_uwsgi() -> list[PairResult]:
    """As the fresh clone's make bench saw it (2026-12-01): uWSGI with the smallest
    footprint, starved on health-sync, invalid on movies-sync; gevent invalid on
    movies-sync with timeouts."""
    return [
        entry("uwsgi", "health-sync", [3758.0, 3700.0, 3790.0], pss=40.0, warnings=[UNDERSERVED]),
        entry("gunicorn-sync", "health-sync", [2900.0, 2950.0, 2920.0], pss=60.0),
        entry("granian-wsgi", "health-sync", [2600.0, 2640.0, 2610.0], pss=65.0),
        entry("uwsgi", "movies-sync", [], status="invalid", reason="31 requests timed out"),
        entry("gunicorn-sync", "movies-sync", [700.0, 720.0, 710.0], pss=61.0),
        entry("gunicorn-gevent", "movies-sync", [], status="invalid", reason="timeouts"),
    ]


def test_the_guide_never_names_a_starved_or_invalid_deployment(tmp_path: Path) -> None:
    run = load_run(write(tmp_path, "r", starved_uwsgi()))
    assert set(flagged(run)) == {"uwsgi", "gunicorn-gevent"}
    recs = guide.recommendations(run)
    for rec in recs:
        assert "uwsgi" not in rec.winners, rec
    memory = next(r for r in recs if r.workload == "memory")
    assert memory.winners == ["gunicorn-sync"]  # uWSGI's 40 MiB is not a footprint
    assert "uwsgi" not in memory.text
    trivial = next(r for r in recs if r.workload == "trivial")
    assert trivial.winners == ["gunicorn-sync"]
    assert "uwsgi" in " ".join(trivial.excluded)  # said why, under "not recommended"


def test_the_answer_is_short_names_its_interval_and_what_is_ruled_out(tmp_path: Path) -> None:
    run = load_run(write(tmp_path, "r", starved_uwsgi()))
    said = answer.lines(run)
    assert len(said) <= answer.MAX_LINES
    text = "\n".join(said)
    health = next(line for line in said if line.strip().startswith("health-sync:"))
    assert "use gunicorn-sync" in health
    low, high = rps_interval(next(p for p in run.pairs if p.label == "gunicorn-sync"))  # type: ignore[misc]
    assert f"[{low:,.0f}-{high:,.0f}]" in health and low < 2920 < high
    assert "Not recommended:" in text
    assert re.search(r"uwsgi: health-sync served 1 of 32 connections", text)
    assert "gunicorn-gevent: movies-sync invalid" in text
    assert "95% interval" in said[0]


def test_many_ruled_out_are_cut_to_the_limit_and_counted(tmp_path: Path) -> None:
    entries = [entry("gunicorn-sync", "health-sync", [2900.0, 2950.0, 2920.0])] + [
        entry(f"s{i}", "health-sync", [], status="invalid", reason="x") for i in range(20)
    ]
    said = answer.lines(load_run(write(tmp_path, "many", entries)))
    assert len(said) == answer.MAX_LINES
    assert re.search(r"\.\.\. and \d+ more", said[-1])


def test_trade_offs_say_starved_and_invalid_pairs_apart(tmp_path: Path) -> None:
    run = load_run(write(tmp_path, "r", starved_uwsgi()))
    spots, apart = tradeoffs.split(run.by_scenario("health-sync"), "pss_peak", many=False)
    assert set(spots) == {"gunicorn-sync", "granian-wsgi"}
    assert [p.label for p in apart] == ["uwsgi"]
    assert efficient({n: (s.x, s.y) for n, s in spots.items()}) == {"gunicorn-sync"}
    # A deployment unfit on another scenario is drawn with the rest here (issue 54).
    spots, apart = tradeoffs.split(run.by_scenario("movies-sync"), "p99", many=False)
    assert set(spots) == {"gunicorn-sync"}
    assert {p.label for p in apart} == {"uwsgi", "gunicorn-gevent"}  # invalid here
    html = report.html([run])
    ids = re.findall(r'<section id="([^"]+)"', html)
    assert ids[:3] == ["decision", "not-recommended", "answer"]
    # The unfit deployment is said under the chart, never drawn among the ranked.
    assert "Not ranked on this page: uwsgi (served" in html
    assert "tradeoff-health-sync" in ids
    assert ids.index("tradeoff-health-sync") < ids.index("scenario-health-sync")


@pytest.mark.parametrize(
    ("points", "front"),
    [
        ({"a": (10.0, 5.0), "b": (8.0, 6.0)}, {"a"}),
        ({"a": (10.0, 5.0), "b": (8.0, 2.0), "c": (9.0, 9.0)}, {"a", "b"}),
        ({"a": (10.0, 5.0), "b": (10.0, 5.0)}, {"a", "b"}),
    ],
)
def test_the_efficient_front(points: dict[str, tuple[float, float]], front: set[str]) -> None:
    assert efficient(points) == front


def test_exit_codes_are_one_table() -> None:
    codes = [code for code, _, _ in exits.TABLE]
    assert codes == [0, 1, 2, 3, 130]
    assert "exit codes:" in exits.help_text()
    docs = Path(__file__).resolve().parent.parent / "docs" / "reference" / "exit-codes.md"
    assert docs.read_text() == exits.markdown(), "python -m djbench.run.exits > " + str(docs)


def test_timeouts_without_a_known_cause_are_said_as_the_queue(tmp_path: Path) -> None:
    """A page slower than the load's connections allow (issue 36: 32 connections on one
    worker, pages of 24-89 ms, every request past the 1 s timeout): the answer says why."""
    slow = entry("uvicorn", "movies-sync", [12.0, 11.0, 12.5])
    for t in slow.trials:
        t.errors = {"timeout": 40}
        t.driver_figures.timeout_s = 1.0
    slow.status = "invalid"
    slow.reason = Notice(code="too_many_errors", params={"rate": 0.8, "errors": {"timeout": 40}})
    run = load_run(write(tmp_path, "r", [slow, entry("gunicorn-sync", "movies-sync", [50.0] * 3)]))
    text = "\n".join(answer.lines(run))
    assert "uvicorn: movies-sync invalid: 80.0% of requests timed out" in text
    assert (
        "cause: requests waited longer than the 1 s timeout: 32 connections queue on a layout "
        "that serves about 1 at a time"
    ) in text


def test_the_answer_compares_the_recommendation_with_the_team_s_own_deployment(
    tmp_path: Path,
) -> None:
    """A project's own deployment (its [[deployment]], label `yours-uwsgi`, measured as
    registry entry uwsgi): the answer says how the recommended one compares with it,
    paired by round with its interval, and the layout each ran."""
    best = entry("gunicorn-gthread", "home", [300.0, 310.0, 305.0, 298.0, 307.0])
    best.workers, best.threads = 1, 4
    yours = entry("uwsgi", "home", [200.0, 204.0, 199.0, 203.0, 201.0])
    yours.own, yours.workers, yours.threads = "yours-uwsgi", 2, 4
    run = load_run(write(tmp_path, "r", [best, yours]))
    said = answer.lines(run)
    home = next(i for i, line in enumerate(said) if line.strip().startswith("home:"))
    assert "use gunicorn-gthread (1 worker(s) x 4 thread(s))" in said[home]
    mine = said[home + 1]
    assert mine.startswith("    vs yours, yours-uwsgi (2 worker(s) x 4 thread(s)): 201 req/s")
    ratio = re.search(r"serves (\d\.\d\d)x \[(\d\.\d\d)-(\d\.\d\d)\]: more than yours", mine)
    assert ratio is not None, mine
    assert float(ratio[2]) < 1.5 < float(ratio[3])
    assert "each deployment's own layout" in said[0]


def test_the_answer_names_the_worker_count_its_layout_sweep_measured(tmp_path: Path) -> None:
    """The leader's server at other layouts after the rounds (djbench.run.layouts): the
    answer's worker count, said as a screen; the swept layouts are no deployments of
    the ranking, the leader (its layout in the rounds) still is."""
    ranked = [
        entry("granian-wsgi", "home", [18.0, 18.5, 17.5]),
        entry("gunicorn-sync", "home", [12.0, 12.5, 11.5]),
        entry("uwsgi", "home", [11.0, 11.5, 10.5]),
    ]
    wide = entry("granian-wsgi", "home", [25.0])
    wide.config, wide.workers, wide.threads = "workers=1,threads=16", 1, 16
    rows = [
        {"label": "granian-wsgi", "workers": 1, "threads": 4, "rps": 18.0, "status": "ok"},
        {
            "label": "granian-wsgi{workers=1,threads=16}",
            "workers": 1,
            "threads": 16,
            "rps": 25.0,
            "p99_ms": 300.0,
            "status": "ok",
        },
    ]
    swept = {
        "server": "granian-wsgi",
        "leader": "granian-wsgi",
        "scenario": "home",
        "server_cpus": 1,
        "rows": rows,
        "best": "granian-wsgi{workers=1,threads=16}",
    }
    run = load_run(write(tmp_path, "r", [*ranked, wide], layouts=swept))
    said = answer.lines(run)
    home = next(line for line in said if line.strip().startswith("home:"))
    assert "use granian-wsgi (" in home and "threads=16" not in home
    assert said[0].startswith("Answer: 3 deployment(s)")
    [workers] = [line for line in said if "workers, measured" in line]
    assert "1 worker(s) x 16 thread(s) served most (granian-wsgi{workers=1" in workers
    assert "granian-wsgi on 1 CPU(s)" in workers
    assert "25.0 req/s p99 300 ms" in workers and "a screen, not a test" in workers
    # No time left for a layout: said, never a layout the sweep did not measure.
    rows_cut = {**swept, "rows": rows[:1], "best": None}
    cut = load_run(write(tmp_path, "c", ranked, layouts=rows_cut))
    assert "  workers: no time was left to sweep granian-wsgi's layouts" in "\n".join(
        answer.lines(cut)
    )


def test_a_failure_stays_on_its_page(tmp_path: Path) -> None:
    """Issue 54: a deployment invalid on one page is not ranked there and is ranked on
    the others; the answer names the page and the reason once."""
    entries = [
        *starved_uwsgi(),
        entry("uwsgi", "home", [900.0, 910.0, 905.0, 902.0, 908.0]),
        entry("gunicorn-sync", "home", [500.0, 505.0, 498.0, 502.0, 501.0]),
    ]
    run = load_run(write(tmp_path, "r", entries))
    said = answer.lines(run)
    home = next(line for line in said if line.strip().startswith("home:"))
    assert "use uwsgi" in home, said
    movies = next(line for line in said if line.strip().startswith("movies-sync:"))
    assert "use gunicorn-sync" in movies
    ruled_out = [line for line in said if line.startswith("  uwsgi:")]
    assert len(ruled_out) == 1 and "health-sync" in ruled_out[0], said


def test_the_cut_list_counts_deployments_not_lines(tmp_path: Path) -> None:
    """Issue 57: each cut deployment may carry a cause line; "... and N more" counts
    deployments."""
    entries = [entry("gunicorn-sync", "home", [2900.0, 2950.0, 2920.0])]
    for i in range(12):
        slow = entry(f"s{i}", "home", [12.0, 11.0, 12.5])
        for t in slow.trials:
            t.errors = {"timeout": 40}
        slow.status = "invalid"
        slow.reason = Notice(
            code="too_many_errors", params={"rate": 0.8, "errors": {"timeout": 40}}
        )
        entries.append(slow)
    said = answer.lines(load_run(write(tmp_path, "r", entries)))
    shown = [line for line in said if re.match(r"  s\d+:", line)]
    more = re.search(r"\.\.\. and (\d+) more deployment", said[-1])
    assert more is not None and len(shown) + int(more[1]) == 12, said


def test_the_answer_says_whom_the_race_left_behind(tmp_path: Path) -> None:
    """Issue 56: a deployment the race stopped measuring is said with the round after
    which it stopped and how far behind each page's leader it was; one still in
    contention on a page (a winner there) is not."""
    entries = [
        entry("granian-wsgi", "home", [1000.0, 1010.0, 990.0, 1005.0, 995.0]),
        entry("uwsgi", "home", [990.0, 1000.0, 1000.0, 998.0, 1002.0]),
        entry("uvicorn-h11", "home", [300.0, 310.0, 305.0]),
        entry("granian-wsgi", "list", [500.0, 505.0, 495.0, 502.0, 498.0]),
        entry("uwsgi", "list", [300.0, 305.0, 295.0, 302.0, 298.0]),
        entry("uvicorn-h11", "list", [200.0, 205.0, 195.0]),
    ]
    run = load_run(write(tmp_path, "race", entries))
    said = answer.lines(run)
    [out] = [line for line in said if "Out of the race" in line]
    assert "uvicorn-h11 after round 3 (0.30x-0.40x the leader)" in out
    assert "uwsgi" not in out  # a winner on home: still in contention there
    # A deployment the budget cut short of the plan was not raced out: not said so.
    cut = load_run(write(tmp_path, "cut", entries, budget_cut=["uvicorn-h11"]))
    assert not [line for line in answer.lines(cut) if "Out of the race" in line]


def test_a_raced_layout_sweep_is_said_with_its_interval_and_ties(tmp_path: Path) -> None:
    """Issue 56 item 4: layouts raced in whole rounds give the worker count with its
    interval and the layouts the engine cannot tell from it; an unstable leader among
    them gives no verdict, as in a ranking."""
    ranked = [
        entry("gunicorn-gthread", "home", [470.0, 480.0, 475.0]),
        entry("uwsgi", "home", [300.0, 305.0, 310.0]),
    ]

    def row(workers: int, threads: int, rps: float, low: float, high: float) -> dict:
        label = f"gunicorn-gthread{{workers={workers},threads={threads}}}"
        return {
            "label": label, "workers": workers, "threads": threads, "rps": rps,
            "rps_low": low, "rps_high": high, "rounds": 3, "p99_ms": 90.0, "status": "ok",
        }  # fmt: skip

    rows = [
        {"label": "gunicorn-gthread", "workers": 1, "threads": 4, "rps": 475.0, "status": "ok"},
        row(1, 32, 480.0, 376.0, 575.0),
        row(1, 4, 470.0, 455.0, 490.0),
        row(2, 4, 402.0, 390.0, 415.0),
    ]
    swept = {
        "server": "gunicorn-gthread", "leader": "gunicorn-gthread", "scenario": "home",
        "page": "heaviest", "server_cpus": 1, "rows": rows, "rounds": 3,
        "best": rows[1]["label"], "tied": [rows[2]["label"]],
    }  # fmt: skip
    said = answer.lines(load_run(write(tmp_path, "raced", ranked, layouts=swept)))
    [workers] = [line for line in said if "workers, measured" in line]
    assert "on the heaviest page, home: 1 worker(s) x 32 thread(s) served most" in workers
    assert "480 req/s [376-575], p99 90 ms, raced over 3 rounds" in workers
    assert workers.endswith("cannot be told from it: 1 worker(s) x 4 thread(s)")
    blocked = {**swept, "tied": [], "unstable": [rows[1]["label"]]}
    said = answer.lines(load_run(write(tmp_path, "blocked", ranked, layouts=blocked)))
    [workers] = [line for line in said if "workers, measured" in line]
    assert "1 worker(s) x 32 thread(s) highest so far, no verdict (" in workers
    assert workers.endswith("of 1 worker(s) x 32 thread(s) varied too much to rank them")


def test_a_slow_page_s_interval_keeps_the_digits_that_tell_its_ends_apart() -> None:
    """The six-page startproject site's answer printed "20 req/s [20-20]" for an interval
    of 19.86-20.12: below 100 req/s a figure keeps a decimal, below 10 two."""
    from djbench.reports.figures import rate

    assert [rate(v) for v in (4781.4, 100.0, 52.34, 19.66, 9.871)] == [
        "4,781",
        "100",
        "52.3",
        "19.7",
        "9.87",
    ]
