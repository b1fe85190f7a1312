"""What runbench's option table (djbench.run.flags) gives: the parser, the one check of
which option goes with which job, a matrix cell's argv and the option reference.

Nothing here knows an option by name: each reads the table. ``python -m
djbench.run.cli`` prints the reference (docs/reference/options.md is that output;
tests/test_flags.py fails when they differ).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from djbench.plan.options import OptionError
from djbench.plan.runplan import RunOptions
from djbench.run.flags import ALL, BY_DEST, FLAGS, JOBS, RUNS, TIMED, Flag, Job

REFERENCE_COMMAND = "python -m djbench.run.cli > docs/reference/options.md"


def switch_dest(job: Job) -> str | None:
    return None if job.switch is None else job.switch[2:].replace("-", "_")


def is_given(options: Mapping[str, Any], dest: str) -> bool:
    """Every option defaults to None (a switch to False): given is anything else."""
    value = options.get(dest)
    return value is not None and value is not False  # 0 is given: 0 == False


def job_of(options: Mapping[str, Any]) -> Job:
    """The run's job: the first (in JOBS' order) whose switch is given; else the plain
    run. --capacity with --tune is a tuning by capacity."""
    for job in JOBS.values():
        dest = switch_dest(job)
        if dest is not None and is_given(options, dest):
            return job
    return JOBS["rounds"]


def job_named_in(argv: list[str]) -> Job | None:
    """The job a command line asks for, read before parsing (for a job's own --help)."""
    found = {a.split("=", 1)[0] for a in argv}
    for job in JOBS.values():
        if job.switch is not None and job.switch in found:
            return job
    return None


def _switches(modes: frozenset[str]) -> str:
    named = [JOBS[m].switch or "a plain run" for m in JOBS if m in modes]
    return " or ".join(str(n) for n in named)


def refusal(flag: Flag, job: Job) -> str:
    """One line: why `flag` does not go with `job`, and what it goes with."""
    if job.switch is None:
        return f"{flag.flag} goes with {_switches(flag.modes)}"
    advice = dict(job.instead).get(flag.dest)
    return f"{job.switch} {job.owns}: leave out {flag.flag}" + (f" ({advice})" if advice else "")


def check(options: Mapping[str, Any]) -> Job:
    """Every option given goes with the run's job and has what it needs beside it, or
    OptionError names the first that does not (before anything starts)."""
    job = job_of(options)
    for flag in FLAGS:
        if not is_given(options, flag.dest):
            continue
        if job.name not in flag.modes:
            raise OptionError(refusal(flag, job))
        for need in flag.requires:
            if not is_given(options, need):
                raise OptionError(f"{flag.flag} goes with {BY_DEST[need].flag}")
    return job


def add_arguments(parser: argparse.ArgumentParser, only: Job | None = None) -> None:
    """The table as argparse arguments, a group per heading; with `only`, that job's."""
    groups: dict[str, Any] = {}
    for flag in FLAGS:
        if only is not None and only.name not in flag.modes:
            continue
        if flag.group not in groups:
            groups[flag.group] = parser.add_argument_group(flag.group)
        add = groups[flag.group].add_argument
        # the table holds plain text; argparse formats help with %, so escape it here once
        help_ = argparse.SUPPRESS if flag.hidden else flag.help.replace("%", "%%")
        if flag.type is None:
            add(flag.flag, action="store_true", help=help_)
        elif flag.const is not None:
            add(flag.flag, nargs="?", const=flag.const, metavar=flag.metavar, help=help_)
        else:
            add(flag.flag, type=flag.type, metavar=flag.metavar, help=help_)


def cell_argv(opts: RunOptions, job: str | None = None) -> list[str]:
    """The options that reproduce `opts` in a matrix cell's run (profile values spelled
    out; no --output: the caller says where), each spelled by its table entry; with
    `job`, only those that job takes (a cell's cost probe)."""
    argv: list[str] = []
    for flag in FLAGS:
        if flag.cell is None or (job is not None and job not in flag.modes):
            continue
        value = flag.cell(opts)
        if value is True:
            argv.append(flag.flag)
        elif isinstance(value, str) and value:
            argv += [flag.flag, value]
    return argv


def _jobs_of(flag: Flag) -> str:
    for modes, words in ((ALL, "all"), (RUNS, "every run"), (TIMED, "every timed job")):
        if flag.modes == modes:
            return words
    return ", ".join(
        f"`{JOBS[m].switch}`" if JOBS[m].switch else "plain run" for m in JOBS if m in flag.modes
    )


def reference() -> str:
    """The option reference of the documentation, in Markdown, from the table."""
    lines = [
        "# runbench options",
        "",
        "Generated from `djbench/run/flags/`, the table runbench's parser is built from:",
        f"`{REFERENCE_COMMAND}`.",
        "An option given to a job that does not take it, or without the option it needs,",
        "is a one-line error (exit code 2) before anything starts.",
        "",
        "## Jobs",
        "",
        "| job | asked by | what it does |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {j.name} | `{j.switch or '(no switch)'}` | {j.summary} |" for j in JOBS.values()]
    groups = list(dict.fromkeys(f.group for f in FLAGS))
    for group in groups:
        lines += ["", f"## {group}", "", "| option | jobs | needs | what it does |"]
        lines.append("| --- | --- | --- | --- |")
        for f in FLAGS:
            if f.group != group or f.hidden:
                continue
            value = "" if f.type is None else f" {f.metavar or f.dest.upper()}"
            needs = ", ".join(f"`{BY_DEST[n].flag}`" for n in f.requires)
            text = f.help.replace("|", "\\|")
            lines.append(f"| `{f.flag}{value}` | {_jobs_of(f)} | {needs} | {text} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reference(), end="")
