"""Load from other machines: a Locust master that lasts the run, and the address the
servers djbench starts are loaded at (issue 25 items 1 and 2).

`check` refuses what cannot work before anything starts; `lasting_master` starts the
master when --locust-master-bind asks for one and gives the plan its web UI's address
(every trial is then driven through it). Nothing leaves loopback unless the user said
--allow-remote-target, and the console says where load goes.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from djbench.measure.drivers import Driver, having
from djbench.measure.drivers.locustmaster import MasterError, lasting_master, parse_bind
from djbench.plan.options import OptionError
from djbench.plan.runplan import RunOptions
from djbench.run.roundplan import Plan


def check(opts: RunOptions, driver: Driver, loopback: Callable[[str], bool]) -> None:
    """One line for a combination that cannot work; `loopback` judges an address."""
    bind = opts.locust_master_bind
    if bind is not None:
        if not driver.worker_processes:
            raise OptionError(f"--locust-master-bind is for --driver {having('worker_processes')}")
        try:
            host, _ = parse_bind(bind)
        except ValueError as exc:
            raise OptionError(str(exc)) from None
        if not loopback(host) and not opts.allow_remote_target:
            raise OptionError(
                f"--locust-master-bind {bind} is outside loopback: workers on other "
                "machines would drive the load; add --allow-remote-target to mean it"
            )
    advertised = opts.advertise_host
    if advertised is not None:
        if opts.target is not None:
            raise OptionError("--advertise-host binds servers djbench starts: not with --target")
        if not loopback(advertised) and not opts.allow_remote_target:
            raise OptionError(
                f"--advertise-host {advertised} is outside loopback: servers would listen "
                "there and load would go there; add --allow-remote-target to mean it"
            )


def driver_workers(opts: RunOptions) -> int:
    """Locust's workers: the remote ones awaited, or the local processes."""
    return opts.locust_expect_workers if opts.locust_master_bind else opts.locust_workers


@contextlib.contextmanager
def master_for(
    opts: RunOptions, plan: Plan, run_dir: Path, cpus: tuple[int, ...], console: Console
) -> Iterator[Plan]:
    """The plan as it is, or (--locust-master-bind) with a lasting master's address in
    its load settings while that master runs."""
    if opts.locust_master_bind is None:
        yield plan
        return

    def say(line: str) -> None:
        console.print(escape(line))

    try:
        with lasting_master(
            opts.locust_master_bind, opts.locust_expect_workers, opts.locust_join_timeout,
            run_dir, cpus, say,
        ) as web:  # fmt: skip
            settings = dataclasses.replace(plan.settings, master_web=web)
            yield dataclasses.replace(plan, settings=settings)
    except MasterError as exc:
        raise OptionError(str(exc)) from None
