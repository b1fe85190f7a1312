"""--resume refuses what would mix trials of two set-ups (djbench.run.resume)."""

from __future__ import annotations

import pytest

from djbench.plan import runplan
from djbench.results.model import Database, Environment, PlanRecord, RunDocument, ScenarioMeta
from djbench.run import resume


def options(**given: object) -> dict[str, object]:
    return {"output": "bench-results", **given}


def from_command(options: dict[str, object]) -> runplan.RunOptions:
    return runplan.from_command(options, "rounds")


def test_options_left_at_their_default_take_the_runs() -> None:
    saved = from_command(options(trials=5, servers="uvicorn", duration=2.0))
    assert resume.option_conflicts(from_command(options()), saved) == []
    # --output (where the run is) and --no-setup are not part of what is measured.
    given = from_command(options(output="elsewhere", no_setup=True))
    assert resume.option_conflicts(given, saved) == []


def test_options_that_disagree_are_named_with_the_runs_value() -> None:
    saved = from_command(options(trials=5, servers="uvicorn"))
    given = from_command(options(trials=3 + 4, servers="daphne", axis="DB_POOL=0,1"))
    assert resume.option_conflicts(given, saved) == [
        "--servers daphne (the run has uvicorn)",
        "--trials 7 (the run has 5)",
        "--axis DB_POOL=0,1 (the run has (none))",
    ]
    # The same values again are not a conflict.
    assert resume.option_conflicts(from_command(options(trials=5)), saved) == []


def test_quick_against_a_default_run_conflicts() -> None:
    saved = from_command(options())
    [problem] = resume.option_conflicts(from_command(options(quick=True)), saved)
    assert problem == "--profile quick (the run has default)"


def environment(**changes: object) -> Environment:
    base = Environment(
        python="3.11.7",
        django="5.2.19",
        packages={"uvicorn": "0.38.0", "gunicorn": "23.0.0"},
        tools={"wrk": "wrk 4.1.0"},
        git_sha="abc123",
        git_dirty=False,
        settings_module="sampleproject.settings",
        database=Database(vendor="sqlite", server_version="3.40.1"),
    )
    return base.model_copy(update=changes)


def test_environment_changes_are_named() -> None:
    saved = environment()
    assert resume.environment_changes(saved, environment()) == []
    now = environment(
        django="6.0.1", git_sha="def456", packages={"uvicorn": "0.39.0", "gunicorn": "23.0.0"}
    )
    assert resume.environment_changes(saved, now) == [
        "Django 5.2.19 -> 6.0.1",
        "git commit abc123 -> def456",
        "package uvicorn 0.38.0 -> 0.39.0",
    ]
    # A value that one side could not read is not a change.
    unread = environment(database=Database(vendor="sqlite", server_version=None))
    assert resume.environment_changes(saved, unread) == []
    other = environment(database=Database(vendor="postgresql", server_version="15.20"))
    assert resume.environment_changes(saved, other) == [
        "database sqlite -> postgresql",
        "database server 3.40.1 -> 15.20",
    ]
    dirty = resume.environment_changes(saved, environment(git_dirty=True))
    assert dirty == ["the project's checkout has uncommitted changes now"]


def test_a_changed_or_missing_scenario_is_named() -> None:
    document = RunDocument(
        run_id="r1",
        kind="benchmark",
        plan=PlanRecord(
            scenarios={
                "health-sync": ScenarioMeta(fingerprint="aaa"),
                "movies-sync": ScenarioMeta(fingerprint="bbb"),
            }
        ),
    )
    assert resume.scenario_changes(document, {"health-sync": "aaa", "movies-sync": "bbb"}) == []
    assert resume.scenario_changes(document, {"health-sync": "ccc"}) == [
        "scenario 'health-sync' changed (fingerprint aaa -> ccc)",
        "scenario 'movies-sync' is gone",
    ]
    sentence = resume.refusal("r1", ["Django 5.2.19 -> 6.0.1"], "what it measures changed")
    assert sentence.startswith("--resume r1: what it measures changed: Django 5.2.19 -> 6.0.1.")
    assert "start a new run" in sentence


def test_a_run_made_with_services_resumes_only_with_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from djbench.plan.options import OptionError
    from djbench.run import services

    url = "postgres=postgres://app:s3cr3t@127.0.0.1:5432/shop"
    saved = from_command(options(database=url))
    assert saved.database == "postgres=postgres://app:***@127.0.0.1:5432/shop"  # no secret
    # The same option again (the password given in full) is no conflict.
    assert resume.option_conflicts(from_command(options(database=url)), saved) == []
    monkeypatch.delenv(services.MARK, raising=False)
    with pytest.raises(OptionError, match="the run was made with --database postgres=postgres"):
        services.required_for_resume("20261130T000000Z-abcdef", saved)
    monkeypatch.setenv(services.MARK, "1")  # restarted with DATABASE_URL: fine
    services.required_for_resume("20261130T000000Z-abcdef", saved)
