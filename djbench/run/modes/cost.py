"""--cost: every page's instructions per request, counted under Valgrind through the
project's own handler (djbench.measure.cost); no server started, no wall clock read.

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
from djbench.measure import cost
from djbench.plan.jobplans import CostPlan
from djbench.plan.options import OptionError
from djbench.plan.project import current
from djbench.plan.runplan import RunOptions
from djbench.results import store
from djbench.results.model import CostRecord, PageCost, RunDocument
from djbench.run import exits, logins
from djbench.run.exits import Ended
from djbench.run.gates import new_run_id
from djbench.run.modes.job import Invocation, Mode
from djbench.run.record import cost_document
from djbench.run.selection import Selection, chosen_scenarios, scenario_choice
from djbench.run.session import begin, setup_project
from djbench.run.show import Show

PARALLEL = min(2, os.cpu_count() or 1)  # children at once: Valgrind runs one thread each


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
    selection = Selection(
        project=project,
        scenario_file=scenario_file,
        scenarios=scenario_file.select(names),
        servers=[],
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
    done: dict[str, PageCost] = {}
    order = [p.scenario for p in probes]
    try:
        with terminate_on_signals(), ThreadPoolExecutor(PARALLEL) as pool:
            futures = [
                pool.submit(cost.measure, selection.project, p, seeds, run_dir) for p in probes
            ]
            for future in as_completed(futures):
                page = future.result()
                done[page.scenario] = page
                record.pages = [done[name] for name in order if name in done]
                store.write_atomic(path, document)
                show.cost(page)
    except KeyboardInterrupt:
        document.status = "interrupted"  # the pages counted so far stay in the file
        store.write_atomic(path, document)
        raise
    return _ended(document, path, run_dir)


def _ended(document: RunDocument, path: Path, run_dir: Path) -> Ended:
    document.status = "complete"
    document.finished = store.now()
    store.write_atomic(path, document)
    assert document.cost is not None
    if not any(p.status == "ok" for p in document.cost.pages):
        return Ended(path, run_dir, outcome=exits.incomplete("nothing_measured"))
    return Ended(path, run_dir)
