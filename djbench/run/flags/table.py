"""The shape of runbench's option table: a job (:class:`Job`), an option (:class:`Flag`),
the jobs in their order of precedence and the headings of --help."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from djbench.measure.drivers import DRIVERS
from djbench.plan.runplan import RunOptions

# --matrix without --budget: the whole command's wall time at most; the rounds are those
# a 10% change needs (decide.PLANNED_CHANGE), fewer when every pair is decided at a look.
MATRIX_BUDGET = "60m"


@dataclass(frozen=True)
class Job:
    """One job runbench does (a mode): the switch that asks for it and, for refusals,
    what it decides by itself."""

    name: str
    switch: str | None  # None: the plain run, asked for by no switch
    summary: str
    owns: str = ""  # "--capacity chooses the rates and connections itself: leave out X"
    # What to do instead, for an option it refuses (by dest), said after the refusal.
    instead: tuple[tuple[str, str], ...] = ()


# In order of precedence: the first whose switch is given is the run's job.
JOBS: dict[str, Job] = {
    j.name: j
    for j in (
        Job("list", "--list", "list servers and scenarios, then exit", "lists and exits"),
        Job("verify", "--verify-only", "the verify gate only: nothing timed", "times nothing"),
        Job(
            "cost",
            "--cost",
            "instructions per request of every page, counted under Valgrind: no server, "
            "no wall clock",
            "starts no server and times nothing",
        ),
        Job(
            "matrix",
            "--matrix",
            "one plan in an isolated environment per version, rounds interleaved, a "
            "paired verdict per pair; exit 1 when anything got worse",
            "runs the same plan in every cell",
            (
                ("soak", "run the soak in each environment separately"),
                (
                    "tune",
                    "tune in one environment first (runbench --tune), then compare the "
                    "cells at an equal configuration",
                ),
                ("target", "it builds environments to start servers in; --target starts none"),
            ),
        ),
        Job(
            "tune",
            "--tune",
            "search each server's best configuration (processes, threads, its knobs)",
            "searches each server's layout itself",
        ),
        Job(
            "churn",
            "--churn",
            "events under a steady open-loop load: requests lost, time to recover",
            "runs one open-loop window per event at --rate",
        ),
        Job(
            "capacity",
            "--capacity",
            "the highest offered rate each pair serves within a p99 target",
            "chooses the rates and connections itself",
        ),
        Job(
            "sweep",
            "--sweep",
            "closed-loop req/s against concurrency, doubling until it stops rising",
            "chooses the concurrency itself",
        ),
        Job(
            "soak",
            "--soak",
            "one long window per pair: memory and latency as a time series",
            "sets one long window itself",
        ),
        Job("rounds", None, "every server in interleaved rounds of timed windows, ranked"),
    )
}

ALL = frozenset(JOBS)
RUNS = ALL - {"list", "cost"}  # everything that starts a server
TIMED = RUNS - {"verify"}  # everything that loads one
TARGETABLE = frozenset({"rounds", "verify", "capacity", "sweep"})  # what --target runs

Spell = Callable[[RunOptions], "str | bool | None"]


@dataclass(frozen=True)
class Flag:
    """One runbench option. ``type`` None is a switch; ``cell`` None: a matrix cell's
    run is not given it (the matrix decides it, or it is the parent's alone)."""

    dest: str
    help: str
    group: str
    modes: frozenset[str] = ALL
    type: Callable[[str], Any] | None = str
    metavar: str | None = None
    requires: tuple[str, ...] = ()  # dests that must be given with it
    example: str = "1"  # a valid value, for the generic check's tests
    cell: Spell | None = None
    const: str | None = None  # --redis alone means this
    hidden: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.dest.replace("_", "-")


def _g(value: float | None) -> str | None:
    return None if value is None else f"{value:g}"


def _joined(values: list[Any], *, unless: list[Any] | None = None) -> str | None:
    return None if not values or values == unless else ",".join(str(v) for v in values)


def _locust(bind: bool, spell: Spell) -> Spell:
    """A Locust option is given to a cell when its driver has worker processes, by where
    they run (here: --locust-workers; elsewhere: --locust-master-bind and the rest)."""

    def workers(o: RunOptions) -> bool:
        driver = DRIVERS.get(o.driver)
        return driver is not None and driver.worker_processes

    return lambda o: spell(o) if workers(o) and (o.locust_master_bind is not None) == bind else None


JOB = "jobs (one per run; none: the plain run)"
WHAT = "what to run"
LOAD = "load"
SEARCH = "searches and their targets"
MATRIX = "--matrix (upgrade validation)"
REMOTE = "where the load comes from and goes to"
FILES = "services and files"
