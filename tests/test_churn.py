"""Deploys and restarts under load (issue 24 item 3): the event analysis on recorded
slices, the refusals, and a live reload and a killed worker under a steady open-loop
load on gunicorn-sync and Uvicorn; Daphne, which has no graceful reload, is
`incompatible` with the reason."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from djbench.reports.search_words import churn_event_text
from djbench.results import store
from djbench.results.model import Churn, LoadPoint, Trial
from djbench.run.modes.churn import tally
from djbench.verdicts import churn_events as churn_stats


def slices(p99s: list[float | None], errors: dict[int, int] | None = None) -> list[LoadPoint]:
    errors = errors or {}
    return [
        LoadPoint(
            t=i * 0.5, seconds=0.5, requests=0 if p is None else 50, errors=errors.get(i, 0),
            p99_ms=p, max_ms=p,
        )
        for i, p in enumerate(p99s)
    ]  # fmt: skip


def test_an_event_is_judged_against_the_steady_slices_before_it() -> None:
    # 8 steady slices (the first, the window's opening, left out), the event at 4 s,
    # a stall with errors, then back to steady from 5.5 s on.
    load = slices([30, 2, 3, 2, 3, 2, 3, 2, 400, 250, 9, 3, 2, 3, 2], errors={8: 3, 9: 1})
    event = churn_stats.analyse("reload", load, 4.0, births_after=2, signal="SIGHUP")
    assert event.steady_p99_ms == 2.0 and event.failed == 4 and event.restarts == 2
    assert event.worst_p99_ms == 400 and event.kept_serving
    assert event.recovered_after_s == 1.5  # 9 ms is out of band (2 x 2 = 4, 2 + 5 = 7)
    text = churn_event_text(event)
    assert text.startswith("graceful reload (SIGHUP) at 4 s: 4 failed; p99 up to 400.0 ms")
    assert "back in band after 1.5 s" in text


def test_a_silent_slice_and_a_window_that_never_settles() -> None:
    load = slices([2, 2, 2, 2, 2, 2, 2, 2, None, 300, 3, 3, 3, 3, 80])
    event = churn_stats.analyse("kill-worker", load, 4.0, births_after=1)
    assert not event.kept_serving and event.recovered_after_s is None
    assert "not back in band by the window's end" in churn_event_text(event)


def test_churn_refuses_what_it_would_ignore() -> None:
    with pytest.raises(CommandError, match="takes reload, kill-worker, recycle"):
        call_command("runbench", "--churn", "restart", stdout=StringIO())
    with pytest.raises(CommandError, match="leave out --capacity"):
        call_command("runbench", "--churn", "reload", "--capacity", stdout=StringIO())
    with pytest.raises(CommandError, match="leave out --trials"):
        call_command("runbench", "--churn", "reload", "--trials", "3", stdout=StringIO())
    with pytest.raises(CommandError, match="builtin driver"):
        call_command("runbench", "--churn", "reload", "--driver", "wrk", stdout=StringIO())


@pytest.mark.servers
def test_a_reload_and_a_killed_worker_under_load(
    live_database: str, tmp_path: Path, one_pass: None
) -> None:
    rate, window = 50.0, 3.0
    out = StringIO()
    call_command(
        "runbench", "--churn", "reload,kill-worker", "--servers", "gunicorn-sync,uvicorn,daphne",
        "--scenarios", "health-sync", "--rate", str(rate), "--duration", str(window),
        "--warmup", "0.5", "--ws-idle", "0", "--no-setup", "--output", str(tmp_path),
        stdout=out,
    )  # fmt: skip
    [path] = tmp_path.glob("*.json")
    document = store.load(path)
    by_server = {e.server: e for e in document.results}
    daphne = by_server["daphne"]
    assert daphne.status == "incompatible" and daphne.reason is not None
    assert "no graceful reload signal" in daphne.reason.params["why"]
    for name in ("gunicorn-sync", "uvicorn"):
        entry = by_server[name]
        assert entry.status == "ok" and entry.churn is not None, (name, entry.reason)
        assert entry.churn.workers == 2  # a single process has nothing to reload
        kinds = {e.kind: e for e in entry.churn.events}
        assert set(kinds) == {"reload", "kill-worker"}, entry.churn
        assert kinds["reload"].signal == "SIGHUP" and kinds["kill-worker"].signal == "SIGKILL"
        assert kinds["reload"].restarts >= 1 and kinds["kill-worker"].restarts >= 1
        for trial in entry.trials:
            # Every request due in the window is accounted for: answered, failed, or
            # never sent (nothing vanishes around a reload).
            # (`unsent` is one of the window's errors.)
            due = trial.requests + trial.error_count
            assert abs(due - rate * window) <= 2, (name, due)
        assert entry.churn.unsent == sum(t.errors.get("unsent", 0) for t in entry.trials)
    printed = " ".join(out.getvalue().split())
    assert "Churn: events under 50 req/s" in printed
    guide = tmp_path / "guide.md"
    call_command("benchguide", str(path), "--output", str(guide), stdout=StringIO())
    assert "### Deploys and restarts" in guide.read_text()


def test_requests_never_sent_in_a_churn_window_are_counted() -> None:
    # The builtin driver counts open loop's requests due and never sent among the
    # window's errors; a reload that stalls the server shows there.
    record = Churn(rate=50, workers=2, window_s=6, slice_s=0.5)
    trial = Trial(
        round=0, valid=True, requests=280, duration_s=6.0, rps=46.7,
        errors={"timeout": 2, "unsent": 18}, error_count=20,
    )  # fmt: skip
    tally(record, trial, [])
    tally(record, trial, [])
    assert record.unsent == 36
