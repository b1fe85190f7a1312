"""What every timed job shares: the refusals before anything starts, the results
document and its recorder, signals and the watchdog, CPU pinning, progress, and the
end (saved and judged; the command shows it: djbench.reports.endings). A job's own part
is its :class:`Mode` (djbench.run.modes).

    check -> select -> refuse -> reap, watchdog -> plan -> record -> run -> finish
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connections
from rich.markup import escape

from djbench.launch import datastate
from djbench.launch.process import pinned_self, reap, start_watchdog, terminate_on_signals
from djbench.measure.drivers import unavailable
from djbench.plan.options import OptionError
from djbench.plan.project import Project
from djbench.plan.runplan import RunOptions
from djbench.plan.scenarios import Scenario
from djbench.results import store
from djbench.results.model import PairResult
from djbench.run import (
    exits,
    logins,
    pilot_fit,
    record,
    remote,
    resume,
    services,
    side_by_side,
    variants,
)
from djbench.run.bench import Bench, Progress, Recorder, SaveFailed
from djbench.run.exits import Ended
from djbench.run.gates import new_run_id
from djbench.run.modes.job import Context, Invocation, Mode
from djbench.run.roundplan import Plan
from djbench.run.selection import (
    Selection,
    check_mixes,
    chosen_scenarios,
    driver_for,
    from_tuning,
    load_settings,
    loopback,
    runnable,
    select,
    target_announcement,
)
from djbench.run.show import Show
from djbench.verdicts import thresholds
from djbench.verdicts.runs import load_run


class TimedMode(Mode):
    """A job that loads servers: the shared flow, with its own part in ``run``."""

    def main(self, command: BaseCommand, opts: RunOptions, how: Invocation) -> Ended:
        return run_timed(command, self, opts, how)


class PerPairMode(TimedMode):
    """A job that runs each pair once in its own way (a search, events) rather than in
    rounds: its progress counts a tick a pair."""

    def ticks(self, opts: RunOptions, plan: Plan, selection: Selection) -> int:
        return len(plan.deployments) * len(plan.scenarios)


def resumed(run_id: str, asked: RunOptions, how: Invocation) -> tuple[RunOptions, Invocation]:
    """--resume RUN_ID: the run's saved options and document, refused when the command
    asked for other options or the services it ran with are missing."""
    document, saved, path = record.resumed(run_id, Path(asked.output))
    if conflicts := resume.option_conflicts(asked, saved):
        raise OptionError(
            resume.refusal(
                run_id, conflicts, "it uses the run's own options, and these differ from them"
            )
        )
    services.required_for_resume(run_id, saved)
    # Found where it was asked; --no-setup may skip set-up commands run the first time.
    opts = saved.model_copy(update={"output": asked.output, "setup": saved.setup and asked.setup})
    return opts, dataclasses.replace(how, resumed=document, path=path)


def begin(show: Show, opts: RunOptions) -> None:
    """Once every refusal is behind: earlier runs' leftovers stopped, the watchdog on."""
    for left in reap(Path(opts.output)):
        show.line(f"stopped {left}: left running by an earlier runbench")
    start_watchdog(Path(opts.output))


def selected(opts: RunOptions, show: Show) -> Selection:
    """The selection, refused when nothing can run or the results cannot be written."""
    if (problem := store.unwritable(Path(opts.output))) is not None:
        raise OptionError(f"--output: {problem}")
    selection = select(opts)
    if not selection.servers and not selection.own:
        said = "; ".join(f"{k} {show.words(v)}" for k, v in selection.skipped.items())
        raise CommandError("no server to run: " + said)
    return selection


def setup_project(command: BaseCommand, project: Project) -> None:
    for argv in project.setup_commands:
        try:
            call_command(*argv, stdout=command.stdout, stderr=command.stderr)
        except (CommandError, DatabaseError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CommandError(
                f"setup command {' '.join(argv)!r} failed: {first}", returncode=exits.INCOMPLETE
            ) from None
    connections.close_all()  # servers open their own; keep no SQLite lock here


def planned(
    mode: Mode, opts: RunOptions, selection: Selection, show: Show
) -> tuple[Plan, list[PairResult]]:
    """The plan of a timed job, and the pairs it refuses (recorded, not run)."""
    driver = driver_for(opts)
    remote.check(opts, driver, loopback)
    chosen = chosen_scenarios(selection, opts)
    check_mixes(driver, chosen)
    mode.check(opts, selection, driver)
    if (missing := unavailable(driver)) is not None:
        raise OptionError(missing)
    assert opts.seed is not None
    to_run, not_run, refused_why = runnable(selection, opts, show, driver)
    if opts.config_from is not None:
        to_run = from_tuning(opts, to_run, show)
    plan = Plan(
        deployments=to_run,
        scenarios=chosen,
        concurrency=opts.concurrency,
        trials=opts.trials,
        settings=load_settings(opts, selection),
        driver=driver,
        health_path=selection.scenario_file.health_path,
        ws_idle=opts.ws_idle,
        seed=opts.seed,
        side_by_side=opts.pairing == "alternate",
        side_by_side_from=side_by_side.first_round(chosen, opts.ws_idle),
    )
    refused = variants.refused_entries(not_run, chosen, list(plan.concurrency), refused_why, driver)
    return plan, refused


def run_timed(command: BaseCommand, mode: Mode, opts: RunOptions, how: Invocation) -> Ended:
    started = time.monotonic()
    if opts.seed is None:
        opts = opts.model_copy(update={"seed": secrets.randbelow(2**31)})
    show = how.show
    selection = selected(opts, show)
    plan, refused = planned(mode, opts, selection, show)
    begin(show, opts)
    show.skipped(selection.skipped)
    if opts.setup and opts.target is None:  # a target's data is its own
        setup_project(command, selection.project)
    if opts.target is not None:
        show.line(target_announcement(opts, plan))
    plan = dataclasses.replace(plan, scenarios=logins.prepare(plan.scenarios))
    run_id = how.resumed.run_id if how.resumed else new_run_id()
    run_dir = Path(opts.output) / run_id
    with datastate.same_data(run_dir, writers(plan.scenarios)) as data:
        recorder = _measured(show, mode, opts, how, selection, plan, refused, run_dir, started)
        recorder.document.plan.data = data.record
        recorder.save()
    if how.until_round is not None and how.until_round < plan.trials:
        pause(show, recorder, how.until_round, Path(opts.output))
        return Ended()
    return finish(mode, recorder, run_dir, opts.on_inconclusive)


def writers(scenarios: list[Scenario]) -> list[str]:
    """The scenarios that change rows (a mix's, by its pages)."""
    return [s.name for s in scenarios if s.writes or any(p.scenario.writes for p in s.mix)]


def _measured(
    show: Show,
    mode: Mode,
    opts: RunOptions,
    how: Invocation,
    selection: Selection,
    plan: Plan,
    refused: list[PairResult],
    run_dir: Path,
    started: float,
) -> Recorder:
    """The pilot, the document, and the mode's measurements, servers stopped at the end."""
    resumed = (how.resumed, how.path) if how.resumed and how.path else None
    run_id = run_dir.name
    fit = None
    if opts.fit and resumed is None:  # the plan as it will run, before its document
        opts, plan, fit = pilot_fit.fitted(show, selection, opts, plan, run_dir)
    asked = None
    # The planned rounds fitted to the budget at the fitted windows (the pilot measured
    # a lifetime's start and stop); windows as asked are run as asked.
    if opts.budget is not None and fit is not None and mode.budgets_rounds:
        left = started + opts.budget - time.monotonic()
        plan, asked = pilot_fit.reshaped(show, plan, left, fit.lifetime_s)
    document, path = record.open_document(selection, opts, plan, resumed, run_id, fit)
    document.plan.trials_asked = asked
    document.status = "running"
    known = {e.label for e in document.results}  # a resumed run has them already
    document.results += [e for e in refused if e.label not in known]
    recorder = Recorder(path, document)
    recorder.save()
    total = announce(show, mode, opts, selection, plan, document.run_id, how.until_round)
    with (
        interrupted_says(recorder, Path(opts.output)),
        terminate_on_signals(),
        pinned_self(selection.driver_cpus),
        progress_bar(show, total) as progress,
        remote.master_for(opts, plan, run_dir, selection.driver_cpus, show.console) as ready,
    ):
        deadline = started + opts.budget if opts.budget is not None else None
        bench = Bench(selection.project, ready, recorder, run_dir, progress, deadline, how.turns)
        ctx = Context(bench, selection, opts, how.until_round)
        mode.run(ctx)
        if opts.budget is not None and how.until_round is None and mode.says_budget(opts):
            show.line(show.budget(document.plan))
    return recorder


@contextlib.contextmanager
def interrupted_says(recorder: Recorder, output: Path) -> Iterator[None]:
    """A full disk or ^C: every server is stopped already; say how to finish."""
    run_id, path = recorder.document.run_id, recorder.path
    resume = f"manage.py runbench --resume {run_id} --output {output}"
    try:
        yield
    except SaveFailed as exc:
        raise CommandError(
            f"could not save the results ({exc}); every server was stopped; the file "
            f"holds the trials saved before; when there is room again: {resume}",
            returncode=exits.INCOMPLETE,
        ) from None
    except KeyboardInterrupt:
        recorder.document.status = "interrupted"
        with contextlib.suppress(SaveFailed):  # the last good file stands; say the rest
            recorder.save()
        raise CommandError(
            f"interrupted; every server was stopped; results so far in {path}; "
            f"finish with: {resume}",
            returncode=exits.INTERRUPTED,
        ) from None


def progress_lines(show: Show, total: int) -> Progress:
    done, planned = [0], [total]

    def out(text: str) -> None:
        show.line(text)
        with contextlib.suppress(AttributeError, OSError, ValueError):
            show.console.file.flush()

    def advance(n: int, label: str) -> None:
        done[0] += n

    def grow(n: int) -> None:
        planned[0] += n

    return Progress(
        advance=advance,
        say=out,
        finished=lambda label, trial: out(show.trial(done[0], planned[0], label, trial)),
        grow=grow,
        words=show.words,
        capacity=show.capacity,
    )


def pause(show: Show, recorder: Recorder, at: int, output: Path) -> None:
    """--until-round: the run stops after that round, saved as interrupted."""
    recorder.document.status = "interrupted"
    recorder.save()
    show.line(
        f"Paused after round {at} of {recorder.document.plan.trials}: {recorder.path}; "
        f"continue with manage.py runbench --resume {recorder.document.run_id} "
        f"--output {output}"
    )


def announce(
    show: Show,
    mode: Mode,
    opts: RunOptions,
    selection: Selection,
    plan: Plan,
    run_id: str,
    until_round: int | None,
) -> int:
    """The run's plan in one line (the job says what each pair gets); the progress
    bar's total."""
    every = opts.new_connection_every
    line = (
        f"Run {run_id}: {len(plan.deployments)} deployment(s) x {len(plan.scenarios)} "
        f"scenario(s) x {len(plan.concurrency)} concurrency level(s) x "
        f"{mode.each_pair(opts, plan)}; driver {plan.driver.name}"
        + (f" (a new connection every {every} answer(s))" if every else "")
        + f"; {plan.settings.duration:g}s windows after {plan.settings.warmup:g}s "
        f"warm-up; server CPUs {list(selection.server_cpus) or 'unpinned'}, driver CPUs "
        f"{list(selection.driver_cpus) or 'unpinned'}"
        + side_by_side.announced(plan, opts.budget is not None)
        + ("" if opts.budget is None or until_round is not None else mode.budget_line(opts))
    )
    for text in (line, *mode.more(opts, plan, selection)):
        show.line(text)
    return mode.ticks(opts, plan, selection)


def finish(mode: Mode, recorder: Recorder, run_dir: Path, on_inconclusive: str = "pass") -> Ended:
    """The run complete and saved, and judged: exit 3 when nothing was measured, 1 when
    a threshold of the scenario file was missed (or, with --on-inconclusive fail, too
    close to call). The command shows the rest (djbench.reports.endings)."""
    document = recorder.document
    document.status = "complete"
    document.finished = store.now()
    recorder.save()
    ended = functools.partial(Ended, recorder.path, run_dir)
    if not mode.measured(document):
        return ended(outcome=exits.incomplete("nothing_measured"))
    checks = thresholds.of_run(load_run(recorder.path))
    for verdict, fails in (("missed", True), ("too close", on_inconclusive == "fail")):
        found = [(p, c) for p, c in checks if c.verdict == verdict]
        if found and fails:
            p, c = found[0]
            first = {"label": p.label, "scenario": p.scenario, **dataclasses.asdict(c)}
            return ended(
                outcome=exits.verdict("thresholds", verdict=verdict, count=len(found), first=first)
            )
    return ended()


@contextlib.contextmanager
def progress_bar(show: Show, total: int) -> Iterator[Progress]:
    """A progress bar on a terminal; elsewhere (a pipe, a file, CI) a flushed line per
    finished trial and per message, so that a log shows the run as it goes."""
    console = show.console
    if not console.is_terminal:
        yield progress_lines(show, total)
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as Bar

    with Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as bar:
        task = bar.add_task("starting", total=total)

        def advance(n: int, label: str) -> None:
            bar.update(task, advance=n, description=escape(label) if label else None)

        def grow(n: int) -> None:
            bar.update(task, total=(bar.tasks[0].total or 0) + n)

        yield Progress(
            advance=advance,
            say=lambda m: bar.console.print(escape(m)),
            grow=grow,
            words=show.words,
            capacity=show.capacity,
        )
