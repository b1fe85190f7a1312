"""runbench's option table (djbench.run.flags) is the one source of its parser, of the
one check of which option goes with which job, of a matrix cell's argv and of the
option reference: each is checked against the table here."""

from __future__ import annotations

import subprocess
import sys
import time
from io import StringIO
from pathlib import Path
from typing import Any

import psutil
import pytest
from django.core.management import CommandError, call_command

from djbench.management.commands.runbench import Command
from djbench.plan.runplan import RunOptions, from_command
from djbench.run import cli
from djbench.run.flags import BY_DEST, FLAGS, JOBS, Flag, Job

ROOT = Path(__file__).resolve().parent.parent


def switch_args(job: Job) -> list[str]:
    """The command line that asks for `job`."""
    if job.switch is None:
        return []
    flag = BY_DEST[cli.switch_dest(job) or ""]
    return [job.switch] if flag.type is None else [job.switch, flag.example]


def flag_args(flag: Flag) -> list[str]:
    return [flag.flag] if flag.type is None else [flag.flag, flag.example]


@pytest.fixture(autouse=True)
def nothing_may_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal comes before the watchdog, the reaping of earlier runs, and any server."""

    def started(what: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> None:
            raise AssertionError(f"{what} was started before the refusal")

        return fail

    from djbench.run import session

    monkeypatch.setattr(session, "start_watchdog", started("the watchdog"))
    monkeypatch.setattr(session, "reap", started("reaping"))
    monkeypatch.setattr("djbench.launch.live.deploy", started("a server"))
    monkeypatch.setattr("djbench.run.gates.deploy", started("a server"))


def refused(args: list[str], tmp_path: Path) -> CommandError:
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    started = time.monotonic()
    with pytest.raises(CommandError) as caught:
        call_command("runbench", "--output", str(tmp_path), *args, stdout=StringIO())
    assert time.monotonic() - started < 3, args
    after = {p.pid for p in psutil.Process().children(recursive=True)}
    assert after <= before, f"{args} started {after - before}"
    assert not any(tmp_path.iterdir()), f"{args} wrote {list(tmp_path.iterdir())}"
    return caught.value


def mismatches() -> list[tuple[Job, Flag]]:
    """Every (job, option) the table says do not go together; a job's own switch and
    the job an option's presence would make the run aside."""
    pairs = []
    for job in JOBS.values():
        for flag in FLAGS:
            if job.name in flag.modes or flag.dest == cli.switch_dest(job):
                continue
            ask = {**{f.dest: None for f in FLAGS}, cli.switch_dest(job) or "": True}
            ask[flag.dest] = True
            if cli.job_of(ask) is not job:  # e.g. --tune with a plain run is --tune
                continue
            pairs.append((job, flag))
    return pairs


def test_every_option_given_to_a_job_that_does_not_take_it_is_one_line(
    tmp_path: Path,
) -> None:
    pairs = mismatches()
    assert len(pairs) > 150  # the table has rules, not a handful
    for job, flag in pairs:
        error = refused([*switch_args(job), *flag_args(flag)], tmp_path)
        message = str(error)
        assert error.returncode == 2, (job.name, flag.flag)
        assert "\n" not in message
        assert flag.flag in message, message


def test_a_round_to_stop_after_is_at_least_one(tmp_path: Path) -> None:
    error = refused(["--until-round", "0"], tmp_path)
    assert str(error) == "--until-round takes a round number of at least 1"
    assert error.returncode == 2


def test_every_requirement_left_out_names_what_it_needs(tmp_path: Path) -> None:
    needing = [f for f in FLAGS if f.requires]
    assert {f.dest for f in needing} >= {"target_pid", "locust_expect_workers"}
    for flag in needing:
        job = next(j for j in JOBS.values() if j.name in flag.modes and j.name != "list")
        error = refused([*switch_args(job), *flag_args(flag)], tmp_path)
        assert str(error) == f"{flag.flag} goes with {BY_DEST[flag.requires[0]].flag}"
        assert error.returncode == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--soak", "1m"], "--soak needs the builtin driver"),
        (["--capacity"], "--capacity needs an open-loop driver: the builtin one"),
        (["--tune", "--capacity"], "--capacity needs an open-loop driver: the builtin one"),
        (["--churn", "reload"], "--churn needs the builtin driver"),
        (["--protocol", "h2"], "--protocol h2/h2c needs --driver h2load or auto"),
        (["--new-connection-every", "2"], "--new-connection-every is the builtin driver's"),
    ],
)
def test_a_job_s_own_refusal_of_its_driver_comes_before_anything_starts(
    args: list[str], message: str, tmp_path: Path
) -> None:
    """What the table cannot say (a driver's capability, known once it is picked) is
    the job's check: refused with one line before the watchdog or any server."""
    from djbench.measure.drivers import DRIVERS

    if not DRIVERS["locust"].available():
        pytest.skip("Locust is not installed (pip install 'djbench[locust]')")
    error = refused([*args, "--driver", "locust", "--servers", "uvicorn"], tmp_path)
    assert error.returncode == 2
    assert message in str(error) and "\n" not in str(error)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--matrix-base", "X"], "--matrix-base goes with --matrix"),
        (["--python", "P"], "--python goes with --matrix"),
        (["--offline"], "--offline goes with --matrix"),
        (["--tune-budget", "60"], "--tune-budget goes with --tune"),
        (["--target-pid", "1"], "--target-pid goes with --target"),
        (["--soak-threshold", "5"], "--soak-threshold goes with --soak"),
    ],
)
def test_an_option_without_its_job_exits_2_from_the_shell(
    args: list[str], message: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "runbench", "--output", str(tmp_path), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"CommandError: {message}"]
    assert not any(tmp_path.iterdir())  # no results file, no watchdog, no log


def parser_flags(job: Job | None = None) -> set[str]:
    command = Command()
    command.help_job = job
    parser = command.create_parser("manage.py", "runbench")
    django_own = {"--version", "--verbosity", "--settings", "--pythonpath", "--traceback"}
    django_own |= {"--no-color", "--force-color", "--skip-checks", "--help"}
    found = {s for a in parser._actions for s in a.option_strings if s.startswith("--")}
    return found - django_own


def test_the_parser_is_the_table() -> None:
    assert parser_flags() == {f.flag for f in FLAGS}
    for job in JOBS.values():  # a job's --help shows its options only
        assert parser_flags(job) == {f.flag for f in FLAGS if job.name in f.modes}


@pytest.mark.parametrize(
    "name", ["runbench", "benchcompare", "benchguide", "benchinit", "benchreport", "benchcalibrate"]
)
def test_every_command_s_help_renders_with_every_job_s(name: str) -> None:
    """argparse %-formats help: a bare "95%" in the table once broke runbench --help."""
    from django.core.management import load_command_class

    command = load_command_class("djbench", name)
    assert "usage" in command.create_parser("manage.py", name).format_help()
    for job in JOBS.values() if name == "runbench" else []:  # each job's own --help
        own = Command()
        own.help_job = job
        assert "usage" in own.create_parser("manage.py", name).format_help(), job.name


def parsed(*argv: str) -> RunOptions:
    options = vars(Command().create_parser("manage.py", "runbench").parse_args(argv))
    job = cli.check(options)
    return from_command(options, job.name)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--quick", "--servers", "uvicorn,gunicorn-sync", "--scenarios", "health-sync"],
        ["--workers", "auto", "--proxy", "none,caddy", "--protocol", "h1,h2", "--seed", "7"],
        ["--workers", "2", "--threads", "4", "--cpus", "0/1", "--port", "8123", "--no-setup"],
        ["--axis", "DB_POOL=0,1;MIDDLEWARE_PROFILE=lean", "--recycle", "off;max-requests=50"],
        ["--rate", "150", "--new-connection-every", "3", "--max-error-rate", "0.02"],
        ["--concurrency", "8,64", "--duration", "1.5", "--warmup", "0.5", "--trials", "5"],
        ["--driver", "locust", "--locust-workers", "3", "--ws-idle", "0"],
        ["--driver", "locust", "--locust-master-bind", "127.0.0.1:5600"],
        ["--locust-expect-workers", "2", "--locust-join-timeout", "30"],
        ["--advertise-host", "127.0.0.1", "--allow-remote-target"],
        ["--target", "http://127.0.0.1:8000", "--target-pid", "1"],
        ["--config-from", "20260101T000000Z-1"],
        ["--soak", "90s", "--concurrency", "4"],
    ],
)
def test_a_matrix_cell_gets_the_same_plan_from_the_table(argv: list[str]) -> None:
    if argv[:1] == ["--locust-expect-workers"]:
        argv = ["--driver", "locust", "--locust-master-bind", "127.0.0.1", *argv]
    opts = parsed(*argv)
    again = parsed(*cli.cell_argv(opts))
    # A cell runs exactly the rounds it is given (the matrix times them): never the
    # plain run's --budget, which only a plan without --trials gets, nor its pilot's
    # fitting (the load is spelled out, the same for every cell).
    assert again == opts.model_copy(update={"budget": None, "fit": False})
    flags = {f.flag for f in FLAGS}
    assert all(a in flags for a in cli.cell_argv(opts) if a.startswith("--"))


def test_every_flag_a_cell_is_not_given_is_the_matrix_s_or_the_parent_s() -> None:
    """A new option must say whether a matrix cell's run gets it: those that do not are
    the jobs the matrix refuses, its own settings, and what the parent alone decides."""
    not_given = {f.dest for f in FLAGS if f.cell is None}
    assert not_given == {
        *("list", "verify_only", "matrix", "tune", "capacity", "sweep", "churn"),
        *("cost", "cost_seeds"),  # a job of its own; a matrix's cost phase spells them
        *("cost_only", "no_cost", "cost_threshold"),  # the matrix's cost phase's own
        *("resume", "until_round", "budget", "tune_budget", "objective", "slo_p99"),
        *("turns", "pairing"),  # the matrix's referee gives a cell its turns
        "capacity_window",  # a capacity job's, and the matrix refuses capacity
        *("soak_threshold", "matrix_base", "threshold", "alpha", "python", "offline"),
        *("output", "database", "redis"),
        *("summary", "junit", "bmf"),  # the parent's CI files, from the matrix's results
        "on_inconclusive",  # the parent's exit code (a cell exits 0 on an open question)
    }


def test_the_docs_reference_is_generated_from_the_table() -> None:
    written = (ROOT / "docs" / "reference" / "options.md").read_text()
    assert written == cli.reference(), f"regenerate it: {cli.REFERENCE_COMMAND}"
    for flag in FLAGS:
        assert (f"`{flag.flag}" in written) != flag.hidden


def test_job_of_follows_the_table_s_precedence() -> None:
    none: dict[str, Any] = {f.dest: None for f in FLAGS}
    assert cli.job_of(none).name == "rounds"
    assert cli.job_of({**none, "capacity": True, "tune": True}).name == "tune"
    assert cli.job_of({**none, "churn": "reload", "capacity": True}).name == "churn"
