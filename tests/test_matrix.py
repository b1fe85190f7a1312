"""runbench --matrix: parsing and planning, then live matrices built with uv.

The live tests build real environments (uv resolves from PyPI, or from uv's cache when
the index is out of reach). They do not depend on the database, so they run in the
SQLite pass only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from djbench.launch import envs
from djbench.measure import cost
from djbench.plan import matrix_axes
from djbench.plan.options import OptionError
from djbench.plan.project import Project
from djbench.plan.runplan import RunOptions
from djbench.results import store
from djbench.results.matrix_model import MatrixDocument
from djbench.run.matrix_build import CellState, inputs
from tests.live import ROOT
from tests.test_ci_outputs import JUNIT
from tests.userproject import SLOW_MIDDLEWARE, git, users_project

GATE = ROOT / "deploy" / "ci" / "upgrade-gate.sh"

# --- parsing and planning ----------------------------------------------------------------


def test_axes_cells_and_pins() -> None:
    axes = matrix_axes.parse("Django=5.2,6.0; python=3.12")
    assert axes == {"django": ["5.2", "6.0"], "python": ["3.12"]}
    cells = matrix_axes.cells(axes)
    assert [c.label for c in cells] == ["django=5.2,python=3.12", "django=6.0,python=3.12"]
    assert cells[0].requirements() == ["django>=5.2,<5.3"]  # python is not a package
    assert matrix_axes.pin("django", "5.2.3") == "django==5.2.3"
    assert matrix_axes.pin("django", "5") == "django>=5,<6"
    assert matrix_axes.pin("django", "~=5.1") == "django~=5.1"
    four = matrix_axes.cells(matrix_axes.parse("django=5.2,6.0;psycopg=3.2,3.3"))
    assert len(four) == 4 and len({c.slug for c in four}) == 4
    assert matrix_axes.base_cell(cells, None) == cells[0]
    refs = matrix_axes.cells(matrix_axes.parse("ref=main,HEAD"))
    assert matrix_axes.base_cell(refs, "HEAD").label == "ref=HEAD"


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("django", "AXIS=V1,V2"),
        ("django=5.2", "at least two cells"),
        ("django=5.2;django=6.0", "twice"),
        ("django=five", "is not a version"),
        ("python=3", "versions like 3.12"),
        ("a=1,2;b=1,2;c=1,2;d=1,2", "at most 8"),
    ],
)
def test_bad_matrices_are_one_sentence(raw: str, words: str) -> None:
    with pytest.raises(OptionError, match=words) as caught:
        matrix_axes.parse(raw)
    assert "\n" not in str(caught.value)


def test_bad_base_names_the_cells() -> None:
    cells = matrix_axes.cells(matrix_axes.parse("django=5.2,6.0"))
    with pytest.raises(OptionError, match=re.escape("valid: django=5.2, django=6.0")):
        matrix_axes.base_cell(cells, "7.0")


def test_a_cells_requirements(tmp_path: Path) -> None:
    opts = RunOptions(servers=["gunicorn-sync", "uvicorn"], proxies=["none", "caddy"])
    project = Project(
        directory=tmp_path,
        settings_module="x.settings",
        wsgi_app="x.wsgi:application",
        asgi_app="x.asgi:application",
        deploy_dir=tmp_path,
        scenarios=tmp_path,
        setup_commands=(),
        requirements=("djbench[sample]", f"-r {tmp_path}/requirements.txt"),
    )
    elsewhere = tmp_path / "tree"
    lines = inputs(project, elsewhere, Path("/src/djbench"), opts)
    # djbench from its checkout with the servers' extras (and the project's own extras
    # of djbench); the project's file read in the cell's copy of the project.
    assert lines == [
        "-e /src/djbench[caddy,gunicorn,sample,uvicorn]",
        f"-r {elsewhere}/requirements.txt",
    ]
    released = inputs(project, tmp_path, None, RunOptions(servers=["daphne"]))
    assert released[0].startswith("djbench[daphne,sample]==")


def test_git_missing_is_a_sentence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on it
    with pytest.raises(envs.EnvError, match="git is not installed here"):
        envs.git(tmp_path, "rev-parse", "--show-toplevel")


def test_uv_failure_is_one_line() -> None:
    text = (
        "  × No solution found when resolving dependencies:\n"  # noqa: RUF001 (uv's own text)
        "  ╰─▶ Because only django<=6.0.10 is available and you require django>=99,\n"
        "      we can conclude that your requirements are unsatisfiable.\n"
    )
    said = envs._uv_failure(text)
    assert said.startswith("Because only django") and "\n" not in said


def test_matrix_option_errors_are_one_line(tmp_path: Path) -> None:
    for args, words in (
        (["--matrix", "django=5.2"], "at least two cells"),
        (["--matrix", "django=5.2,6.0", "--matrix-base", "4.2"], "is not a cell"),
        (["--matrix", "django=5.2,6.0", "--soak", "1m"], "run the soak in each"),
        (["--matrix", "django=5.2,6.0", "--trials", "2"], "needs at least 3 rounds"),
        (["--matrix", "django=5.2,6.0", "--budget", "20s"], "and a verdict needs at least 3"),
        (["--matrix", "django=5.2,6.0", "--alpha", "1.5"], "--alpha takes a probability"),
        (["--matrix", "django=5.2,6.0", "--cost-only", "--no-cost"], "contradict each other"),
        (["--matrix", "django=5.2,6.0", "--cost-threshold", "2"], "--cost-threshold takes a"),
        (["--cost-only"], "--cost-only goes with --matrix"),
        (["--threshold", "0.1"], "--threshold goes with --matrix"),
        (["--matrix", "django=5.2,6.0", "--budget", "nan"], "must be a finite duration"),
        (["--matrix", "django=5.2,6.0", "--tune"], "tune in one environment first"),
        (["--matrix", "django=5.2,6.0", "--python", "/no/such/python"], "--python /no/such"),
        (["--matrix", "django=5.2,6.0", "--python", "/bin/true"], "not a Python 3"),
        (["--tune", "--tune-budget", "nan"], "must be a finite duration"),
        (["--matrix", "django=5.2,6.0", "--pairing", "x"], "valid: alternate, sequential"),
        (["--capacity", "--pairing", "sequential"], "leave out --pairing"),
    ):
        with pytest.raises(CommandError, match=words) as caught:
            call_command("runbench", *args, "--output", str(tmp_path), stdout=StringIO())
        assert caught.value.returncode == 2


def _state(status: str) -> CellState:
    from djbench.results.model import MatrixCell

    cell = matrix_axes.cells(matrix_axes.parse("django=5.2,6.0"))[0]
    return CellState(cell=cell, record=MatrixCell(label=cell.label, axes={}, status=status))


def test_the_default_horizon_is_sized_by_power_and_a_budget_by_the_clock() -> None:
    from djbench.run.matrix_build import Settings
    from djbench.run.matrix_cells import MAX_ROUNDS, horizon, pilot_rounds, plan_line
    from djbench.verdicts.engine import decide

    needed = decide.rounds_needed(decide.PLANNED_CHANGE, 4)
    sized = Settings(axes={}, base=None, python=None, offline=False, sized_by_power=True)
    clock = Settings(axes={}, base=None, python=None, offline=False, budget_s=900.0)
    # 45 s a round: the power's rounds fit the hour; a 15-minute budget buys 20.
    assert horizon(sized, 45.0, 3555.0, 4) == needed
    assert horizon(clock, 45.0, 855.0, 4) == 20
    # Cells side by side: fixed after round 2, at its pace (round 1 runs back to back).
    assert horizon(clock, 40.0, 800.0, 4, done=2) == 22
    assert pilot_rounds(clock, [_state("ok"), _state("ok")]) == 2
    assert pilot_rounds(clock, [_state("ok"), _state("failed")]) == 1
    assert pilot_rounds(dataclasses.replace(clock, pairing="sequential"), []) == 1
    assert pilot_rounds(dataclasses.replace(clock, rounds=4), [_state("ok"), _state("ok")]) == 1
    # A slow round: the cap bounds the horizon, and the line says what it flags instead.
    slow = horizon(sized, 120.0, 3480.0, 4)
    assert slow == 30 < needed
    assert "the rounds the budget allows" in plan_line(sized, 120.0, slow, 4)
    line = plan_line(sized, 45.0, needed, 4)
    assert f"the horizon is {needed} round(s), the rounds a 10% change needs" in line
    assert "They flag 10% on one of 4 pair(s) with 80% power" in line
    assert horizon(sized, 1.0, 1e6, 400) == MAX_ROUNDS  # many pairs: the rounds' own cap
    assert "the most a matrix plans for" in plan_line(sized, 1.0, MAX_ROUNDS, 400)
    # The harness's matrix, at that horizon, on the recorded noise: the power it names.
    from loadtests import harness

    assert needed == harness.HORIZON
    assert harness.power(harness.kinds()["recorded"], 200, 1) >= 0.8


# --- live ----------------------------------------------------------------------------------


def _sqlite_pass_only() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("independent of the database: run in the SQLite pass only")


def _index_or_skip(error: str) -> None:
    """uv could not reach the package index and its cache did not have what it needs."""
    if any(w in error for w in ("Failed to fetch", "dns error", "Could not connect", "offline")):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the package index is out of reach (CI=true): {error}")
        pytest.skip(f"the package index is out of reach: {error}")


def _built_matrix(out: Path) -> tuple[Path, MatrixDocument]:
    """The one matrix file under `out` and its document; skipped when a cell could not
    be built because the package index was out of reach (a failure under CI=true)."""
    [path] = out.glob("matrix-*/matrix.json")
    document = store.load_matrix(path)
    for cell in document.cells:
        if cell.reason:
            _index_or_skip(cell.reason)
    return path, document


@pytest.mark.servers
def test_a_django_matrix_runs_interleaved_and_a_bad_cell_is_a_sentence(
    live_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _sqlite_pass_only()
    monkeypatch.setenv("DJBENCH_CACHE", str(tmp_path / "cache"))
    out = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(
            "runbench",
            "--matrix",
            "django=5.1,5.2,99.0",
            "--matrix-base",
            "5.1",
            "--servers",
            "gunicorn-sync",
            "--scenarios",
            "health-sync,movies-sync",
            "--trials",
            "3",
            "--duration",
            "0.5",
            "--warmup",
            "0.2",
            "--ws-idle",
            "0",
            "--no-cost",  # the cost phase is tested on the ref matrix below
            "--output",
            str(tmp_path / "out"),
            stdout=out,
        )
    text = out.getvalue()
    [path] = (tmp_path / "out").glob("matrix-*/matrix.json")
    document = store.load_matrix(path)
    cells = {c.label: c for c in document.cells}
    bad = cells["django=99.0"]
    if bad.reason:
        _index_or_skip(bad.reason)
    # The cell that cannot be built: uv's reason, one line; the others ran; the matrix
    # could not complete (exit 3), unless a verdict failed: 5.1 and 5.2 really are two
    # versions, and a pair found worse between them wins (exit 1, djbench.run.exits).
    worse = sum(len(v.worse) for v in document.verdicts)
    assert caught.value.returncode == (1 if worse else 3), str(caught.value)
    assert bad.status == "failed" and bad.reason and "\n" not in bad.reason
    assert "django" in bad.reason and "unsatisfiable" in bad.reason, bad.reason
    assert "django=99.0 could not run" in str(caught.value)
    for label, series in (("django=5.1", "5.1."), ("django=5.2", "5.2.")):
        cell = cells[label]
        assert cell.status == "ok", cell.reason
        assert cell.versions["django"].startswith(series)
        assert cell.environment and Path(cell.environment, envs.READY).exists()
        assert cell.run_file
        run = store.load(Path(cell.run_file))
        assert run.status == "complete" and run.environment.django.startswith(series)
        # The cell's interpreter ran it, not this one.
        assert run.environment.python == cell.python_version
        [entry] = [e for e in run.results if e.scenario == "movies-sync"]
        assert [t.round for t in entry.trials] == [0, 1, 2]
        assert len(cell.commands) == 3 and "--until-round 1" in cell.commands[0]
        assert "--resume" in cell.commands[1]
    # In every round the cells that were built ran side by side (--pairing's default),
    # their windows taking turns page by page, in a recorded order; each cell was told.
    # The first round back to back: each cell sets its project up and gates its server.
    assert len(document.order) == 3 and document.rounds == 3
    assert sorted(document.order[0]) == ["django=5.1 gunicorn-sync", "django=5.2 gunicorn-sync"]
    for index, steps in enumerate(document.order[1:], start=1):
        # Turn by turn: each server's start, its two pages, its stop; each cell in turn.
        assert len(steps) == 8, steps
        for first, second in zip(steps[::2], steps[1::2], strict=True):
            assert {first.split()[0], second.split()[0]} == {"django=5.1", "django=5.2"}
            assert first.split()[1:] == second.split()[1:]  # the same step, seconds apart
            assert f"round {index + 1}" in first
        assert steps[0].endswith(": start") and steps[-1].endswith(": stop")
    assert all("--turns" in c for cell in cells.values() for c in cell.commands[1:])
    assert not any("--turns" in cell.commands[0] for cell in cells.values() if cell.commands)
    # Both cells resolved on one interpreter, so only Django differs.
    assert cells["django=5.1"].python == cells["django=5.2"].python
    [verdict] = document.verdicts
    assert verdict.cell == "django=5.2" and verdict.base == "django=5.1"
    assert sum(verdict.counts.values()) == 2 and verdict.shape_changes == []
    # Every pair's verdict, with each metric's ratio and p, is in the file and printed.
    assert {
        (p.scenario, p.verdict in {"worse", "better", "equivalent", "inconclusive"})
        for p in verdict.pairs
    } == {
        ("health-sync", True),
        ("movies-sync", True),
    }
    assert all(p.metrics["rps"].ratio is not None for p in verdict.pairs)
    assert "django=5.2 against django=5.1" in text
    # The report reads the matrix file: a version axis, each cell's runs named by cell.
    md = tmp_path / "report.md"
    call_command("benchreport", str(path), "--markdown", str(md), stdout=StringIO())
    report = md.read_text()
    assert "## movies-sync: req/s by version" in report
    assert "| server | django=5.1 | django=5.2 |" in report
    assert "gunicorn-sync [django=5.2]" in report
    # The same resolution again builds nothing: the environment is found by its hash.
    cell = cells["django=5.2"]
    assert cell.environment and cell.python and cell.python_version
    compiled = Path(cell.environment, "requirements.txt").read_text()
    major, minor, micro = (int(v) for v in cell.python_version.split("."))
    again = envs.build(compiled, envs.Interpreter(cell.python, (major, minor, micro)), offline=True)
    assert again.cached and again.directory == Path(cell.environment)


@pytest.mark.servers
def test_a_ref_matrix_flags_the_commit_that_slowed_a_users_project(tmp_path: Path) -> None:
    """A project nobody here wrote (startproject), in git: HEAD adds a middleware that
    sleeps. The CI gate's script runs --matrix ref=HEAD~2,HEAD~1,HEAD from worktrees and
    says worse (exit 1) in its JUnit and summary too."""
    _sqlite_pass_only()
    root, env = users_project(tmp_path)
    settings = root / "mysite" / "settings.py"
    (root / "mysite" / "slow.py").write_text(SLOW_MIDDLEWARE)
    settings.write_text(settings.read_text() + 'MIDDLEWARE = ["mysite.slow.Slow", *MIDDLEWARE]\n')
    # The likeliest upgrade failure: a commit after which the project no longer imports
    # (HEAD~1; HEAD fixes it, so runbench itself starts from the working tree).
    fine = settings.read_text()
    settings.write_text(fine + "import a_module_that_is_not_installed  # noqa\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a broken commit")
    settings.write_text(fine)
    git(root, "commit", "-q", "-am", "a pull request: fixed, and slower")
    # Through the CI gate's own script (deploy/ci/upgrade-gate.sh, which the workflow
    # files run): the base, then each later commit as a cell judged against it.
    out, summary = tmp_path / "out", tmp_path / "step-summary.md"
    env |= {
        "PYTHON": sys.executable,
        "DJBENCH_OUTPUT": str(out),
        "DJBENCH_BUDGET": "10m",
        # cost first, where Valgrind is; then paired rounds: 20 ms more per request is
        # plain after 4. The middleware's own frame and sleep call are 0.5-1.1% of this
        # 723,000-instruction page (Django 5.2, Python 3.11; two runs here): a 2% cost
        # threshold holds them equal; the sleep itself costs no instruction.
        "DJBENCH_ARGS": "--servers gunicorn-sync --trials 4 --duration 0.5 --warmup 0.2 "
        "--concurrency 4 --ws-idle 0 --cost-seeds 2 --cost-threshold 0.02",
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    done = subprocess.run(
        ["bash", str(GATE), "HEAD~2", "HEAD~1", "HEAD"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    path, document = _built_matrix(tmp_path / "out")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "got worse" in done.stderr and "cell(s) ref=HEAD~1 could not run" in done.stderr
    before, crashed, after = document.cells
    assert before.commit and after.commit and before.commit != after.commit
    assert before.project_dir and "worktrees" in before.project_dir
    assert before.python == after.python
    # The broken commit's runbench ended with a traceback: its cell failed, with the
    # last lines of its output, and did not pass as a completed round.
    assert crashed.status == "failed" and crashed.reason
    assert "after a traceback" in crashed.reason
    assert "a_module_that_is_not_installed" in crashed.reason
    # Cost came first (where Valgrind is): the broken commit failed there already; the
    # sleep costs no instructions, so cost calls the page equal where the rounds see it
    # worse: what the wall clock is kept for.
    if cost.valgrind() is not None:
        assert document.cost is not None and document.cost.status == "counted"
        assert "cost probe" in crashed.reason and "ref=HEAD~1" in document.cost.failed
        [compared] = document.cost.comparisons
        assert (compared.base, compared.new) == ("ref=HEAD~2", "ref=HEAD")
        [ping] = compared.pages
        assert ping.verdict == "equal" and ping.ratio == pytest.approx(1.0, abs=0.02)
        assert "Cost: ref=HEAD against ref=HEAD~2" in done.stdout
    elif os.environ.get("CI", "").lower() == "true":
        pytest.fail("valgrind is not installed (CI=true: .ci/run installs it)")
    [verdict] = document.verdicts
    assert verdict.cell == "ref=HEAD" and len(verdict.worse) == 1, verdict
    assert [p.verdict for p in verdict.pairs] == ["worse"]
    assert "worse" in done.stdout and "gunicorn-sync" in done.stdout
    assert verdict.worse[0].scenario == "ping"
    assert verdict.worse[0].metrics["rps"].verdict == "worse"
    # What CI reads: the JUnit failure of the worse pair, an error for the broken cell,
    # the summary appended to the step summary, as on GitHub.
    junit = ET.parse(out / "junit.xml").getroot()
    assert [f.get("type") for f in junit.iter("failure")] == ["worse"]
    assert len(list(junit.iter("error"))) == 1
    text = summary.read_text()
    assert "| ping | gunicorn-sync | **worse** |" in text and "could not run" in text
    assert "this runner's noise: sd " in text  # the pre-run check, on this runner's noise
    JUNIT.validate(str(out / "junit.xml"))
    assert "djbench upgrade gate: exit 1" in done.stdout
    # The two runs answered alike: the regression is speed, not a changed answer.
    assert verdict.shape_changes == []
    # The worktrees were removed: the user's repository keeps no trace of the matrix.
    listed = (
        subprocess.run(
            ["git", "worktree", "list"], cwd=root, capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .splitlines()
    )
    assert len(listed) == 1, listed
    data = json.loads(path.read_text())
    assert data["kind"] == "matrix"


@pytest.mark.servers
def test_an_aa_ref_matrix_side_by_side_exits_0_with_its_windows_alternated(
    tmp_path: Path,
) -> None:
    """Issue 56: from round 2 the cells' runbench processes at once, each server beside the
    other's, their windows taking turns (--pairing alternate). A commit that changes
    only a comment is judged no worse: exit 0. A threshold of 20% keeps a false "worse"
    out of reach of three rounds' noise (the error rate itself is the harness's)."""
    _sqlite_pass_only()
    root, env = users_project(tmp_path)
    settings = root / "mysite" / "settings.py"
    settings.write_text(settings.read_text() + "# nothing else changed\n")
    git(root, "commit", "-q", "-am", "a comment")
    argv = [sys.executable, "manage.py", "runbench", "--matrix", "ref=HEAD~1,HEAD"]
    argv += ["--pairing", "alternate", "--servers", "gunicorn-sync", "--trials", "3"]
    argv += ["--duration", "0.5", "--warmup", "0.2", "--concurrency", "4", "--ws-idle", "0"]
    argv += ["--no-cost", "--threshold", "0.2", "--output", str(tmp_path / "out")]
    done = subprocess.run(
        argv, cwd=root, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    _, document = _built_matrix(tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cells side by side: ref=HEAD~1, ref=HEAD" in done.stdout
    assert document.rounds == 3 and len(document.order) == 3
    assert sorted(document.order[0]) == ["ref=HEAD gunicorn-sync", "ref=HEAD~1 gunicorn-sync"]
    for index, steps in enumerate(document.order[1:], start=1):  # start, page, stop
        assert len(steps) == 6, steps
        for first, second in zip(steps[::2], steps[1::2], strict=True):
            assert {first.split()[0], second.split()[0]} == {"ref=HEAD", "ref=HEAD~1"}
            assert first.split()[1:] == second.split()[1:]
        assert steps[2].endswith(f"gunicorn-sync ping c=4 round {index + 1}"), steps
    for cell in document.cells:
        assert cell.status == "ok" and len(cell.commands) == 3, cell
        assert ["--turns" in c for c in cell.commands] == [False, True, True]
        run = store.load(Path(cell.run_file or ""))
        [entry] = run.results
        assert [t.round for t in entry.trials] == [0, 1, 2] and entry.status == "ok"
    [verdict] = document.verdicts
    assert verdict.worse == [] and [p.scenario for p in verdict.pairs] == ["ping"]
    # Every process the rounds started has ended: no cell's runbench is left.
    left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout


def test_a_round_that_does_not_run_fails_its_cell(tmp_path: Path) -> None:
    """A cell's runbench that exits 2 (a refusal: the checkout changed under --resume, a
    bad option) did not run its round: the cell fails, it does not go on short of trials."""
    from djbench.results.model import MatrixCell
    from djbench.run.matrix_build import CellState
    from djbench.run.matrix_rounds import run_round

    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\necho 'CommandError: --resume X: what it measures changed'\nexit 2\n"
    )
    fake.chmod(0o755)
    cell = matrix_axes.cells(matrix_axes.parse("django=5.2,6.0"))[0]
    state = CellState(
        cell=cell,
        record=MatrixCell(label=cell.label, axes={}),
        python=str(fake),
        project_dir=tmp_path,
    )
    (tmp_path / "out" / "cells" / cell.slug).mkdir(parents=True)
    (tmp_path / "out" / "cells" / cell.slug / "20260101T000000Z-aaaaaa.json").write_text("{}")
    run_round(state, RunOptions(), 1, tmp_path / "out", lambda m: None)
    assert state.record.status == "failed"
    assert state.record.reason and "in round 2 exited with 2" in state.record.reason
    assert "what it measures changed" in state.record.reason


def test_a_round_that_crashed_or_saved_nothing_fails_its_cell(tmp_path: Path) -> None:
    """The likeliest upgrade failure: the project no longer imports under the new Django.
    runbench then exits 1 after a traceback and saves no results; that is no round."""
    from djbench.results.model import MatrixCell
    from djbench.run.matrix_build import CellState
    from djbench.run.matrix_rounds import run_round

    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\necho 'Traceback (most recent call last):'\n"
        "echo '  File \"settings.py\", line 3'\n"
        "echo \"ImportError: cannot import name 'url' from 'django.conf.urls'\"\nexit 1\n"
    )
    fake.chmod(0o755)
    cell = matrix_axes.cells(matrix_axes.parse("django=5.2,6.0"))[1]
    state = CellState(
        cell=cell, record=MatrixCell(label=cell.label, axes={}), python=str(fake),
        project_dir=tmp_path,
    )  # fmt: skip
    run_round(state, RunOptions(), 0, tmp_path / "out", lambda m: None, "gunicorn-sync")
    assert state.record.status == "failed"
    reason = state.record.reason or ""
    assert "in round 1 saved no results after a traceback" in reason
    assert "ImportError: cannot import name 'url'" in reason and "\n" not in reason
