"""--cost: every page's instructions per request, counted under Valgrind through the
project's own handler (djbench.measure.cost); no wall clock read. With --servers, each
of those servers' own cost per request too (djbench.measure.server_cost): the first
page through the server, less Django's handler for it.

Deterministic for a given hash seed, so two runs before and after a change are compared
in seconds (``benchcompare BASE.json NEW.json``, djbench.verdicts.cost) where the wall
clock needs rounds. Pages are counted two at a time (instruction counts do not depend
on what else the machine runs); a page that fails under the probe is its finding.
"""

from __future__ import annotations

import os
import platform
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from django.core.management.base import BaseCommand

from djbench.launch.process import terminate_on_signals
from djbench.measure import cost, server_cost
from djbench.plan.jobplans import CostPlan
from djbench.plan.options import OptionError, choose
from djbench.plan.project import current
from djbench.plan.runplan import RunOptions
from djbench.results import store
from djbench.results.model import CostRecord, PageCost, RunDocument, ServerCost
from djbench.run import exits, logins
from djbench.run.exits import Ended
from djbench.run.gates import new_run_id
from djbench.run.modes.job import Invocation, Mode
from djbench.run.record import cost_document
from djbench.run.selection import Selection, chosen_scenarios, scenario_choice
from djbench.run.session import begin, setup_project
from djbench.run.show import Show
from djbench.servers import SERVERS, ServerSpec

PARALLEL = min(2, os.cpu_count() or 1)  # children at once: Valgrind runs one thread each
INSTALLED = "installed"  # --cost --servers installed: every server installed here


class CostMode(Mode):
    name = "cost"

    def main(self, command: BaseCommand, opts: RunOptions, how: Invocation) -> Ended:
        if cost.valgrind() is None:
            raise OptionError(
                f"--cost counts instructions under Valgrind, which is not installed here "
                f"(Debian: apt-get install {cost.VALGRIND_PACKAGE})"
            )
        if (problem := store.unwritable(Path(opts.output))) is not None:
            raise OptionError(f"--output: {problem}")
        selection = _selection(opts)
        begin(how.show, opts)
        if opts.setup:
            setup_project(command, selection.project)
        selection.scenarios = logins.prepare(selection.scenarios)
        return count_pages(selection, opts, how.show)


def _selection(opts: RunOptions) -> Selection:
    project = current()
    scenario_file, names = scenario_choice(project, opts)
    asked = choose("server", ",".join(opts.servers), [*SERVERS, INSTALLED])
    servers = [SERVERS[n] for n in asked if n != INSTALLED]
    if INSTALLED in asked:
        servers = [s for s in SERVERS.values() if not s.missing() and not s.lacks_part()]
    if missing := [s.name for s in servers if s.missing()]:
        raise OptionError(
            f"--servers: {', '.join(missing)} not installed here (runbench --list says what is)"
        )
    selection = Selection(
        project=project,
        scenario_file=scenario_file,
        scenarios=scenario_file.select(names),
        servers=servers,
        skipped={},
        proxies=[],
        server_cpus=(),
        driver_cpus=(),
    )
    selection.scenarios = chosen_scenarios(selection, opts)
    return selection


def count_pages(selection: Selection, opts: RunOptions, show: Show) -> Ended:
    assert isinstance(opts.job, CostPlan)
    run_id = new_run_id()
    output = Path(opts.output)
    path, run_dir = output / f"{run_id}.json", output / run_id
    probes = cost.probes(selection.scenarios)
    seeds = tuple(range(opts.job.seeds))
    record = CostRecord(
        valgrind=cost.valgrind_version(),
        seeds=list(seeds),
        settled_within=cost.SETTLED,
        max_segments=cost.MAX_SEGMENTS,
        project_path_length=len(str(selection.project.directory)),
        python=platform.python_version(),
    )
    document = cost_document(run_id, selection, opts, record)
    show.line(
        f"cost: {len(probes)} page(s) x {len(seeds)} hash seed(s) under {record.valgrind}, "
        f"{PARALLEL} at a time; logs in {run_dir}"
    )
    order = [p.scenario for p in probes]
    try:
        with terminate_on_signals():
            _pages(selection, probes, seeds, run_dir, show, record, order, path, document)
            if selection.servers and probes:
                _servers(selection, probes[0], record, run_dir, show, path, document)
    except KeyboardInterrupt:
        document.status = "interrupted"  # the pages counted so far stay in the file
        store.write_atomic(path, document)
        raise
    return _ended(document, path, run_dir)


def _pages(
    selection: Selection,
    probes: list[cost.Probe],
    seeds: tuple[int, ...],
    run_dir: Path,
    show: Show,
    record: CostRecord,
    order: list[str],
    path: Path,
    document: RunDocument,
) -> None:
    done: dict[str, PageCost] = {}
    with ThreadPoolExecutor(PARALLEL) as pool:
        futures = [pool.submit(cost.measure, selection.project, p, seeds, run_dir) for p in probes]
        for future in as_completed(futures):
            page = future.result()
            done[page.scenario] = page
            record.pages = [done[name] for name in order if name in done]
            store.write_atomic(path, document)
            show.cost(page)


def _servers(
    selection: Selection,
    probe: cost.Probe,
    record: CostRecord,
    run_dir: Path,
    show: Show,
    path: Path,
    document: RunDocument,
) -> None:
    """Each server's own cost on the first page: the tree per request through it, less
    Django's handler for the same request in-process (one more count per interface)."""
    show.line(
        f"cost: {len(selection.servers)} server(s) on {probe.scenario}, N={server_cost.REQUESTS} "
        f"and {3 * server_cost.REQUESTS} requests each"
    )
    handlers = _handlers(selection, probe, run_dir)
    work = run_dir / "servers"
    with ThreadPoolExecutor(PARALLEL) as pool:
        futures = {
            pool.submit(server_cost.measure, selection.project, spec, probe, work / spec.name): spec
            for spec in selection.servers
        }
        for future in as_completed(futures):
            found: ServerCost = future.result()
            found.handler = handlers.get(found.interface)
            record.servers = sorted([*record.servers, found], key=lambda s: s.server)
            store.write_atomic(path, document)
            show.server_cost(found)


def _handlers(selection: Selection, probe: cost.Probe, run_dir: Path) -> dict[str, float]:
    """Django's handler per request for the page, by interface, under the servers' seed
    and, as in a server, with the cyclic collector on (the page's own counts run with it
    off: their figure would leave the collector's work in the server's part)."""
    found: dict[str, float] = {}
    for spec in _by_interface(selection.servers):
        handler = server_cost.handler_probe(probe, spec)
        work = run_dir / "handlers" / handler.interface
        try:
            counted, _ = cost.count(
                selection.project, handler, server_cost.SEED, work, collector=True
            )
        except (cost.ProbeFailed, OSError, ValueError):
            continue  # the servers' figures stand without their handler's part
        found[handler.interface] = counted.instructions
    return found


def _by_interface(servers: list[ServerSpec]) -> list[ServerSpec]:
    return list({s.interface: s for s in servers}.values())


def _ended(document: RunDocument, path: Path, run_dir: Path) -> Ended:
    document.status = "complete"
    document.finished = store.now()
    store.write_atomic(path, document)
    assert document.cost is not None
    statuses = [p.status for p in document.cost.pages] + [s.status for s in document.cost.servers]
    if "ok" not in statuses:
        return Ended(path, run_dir, outcome=exits.incomplete("nothing_measured"))
    return Ended(path, run_dir)
