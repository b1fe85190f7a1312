"""Figures derived from results: summaries (computed here and only here) and a
read-only view of a run shared by console, report, compare and guide.

Nothing here runs a server: everything comes from the model that runbench wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from djbench.results import store
from djbench.results.model import (
    DeploymentRound,
    Describe,
    Environment,
    Notice,
    PairMemory,
    PairResult,
    PlanRecord,
    ProxyMemory,
    RunDocument,
    Summary,
    Trial,
)
from djbench.verdicts.engine import stats

LATENCIES = ("p50", "p90", "p99", "p999", "max", "mean")
UNDERSERVED = "underserved"  # the warning code the guide refuses to recommend
# Connections left waiting in a closed loop, whoever is to blame: the server
# ("underserved") or a driver too busy to tell ("client_short"). Either way the trial's
# latency leaves out their wait, so neither a tuning search nor a test may score it.
UNSERVED_CODES = frozenset({UNDERSERVED, "client_short"})
UNSTABLE = "unstable"  # trial-to-trial spread too high to rank (the guide names no winner)
UNSTABLE_CV = 0.10  # pyperf warns above a 10% coefficient of variation
STEAL_PERCENT = 5.0  # a trial whose window lost more CPU than this to the hypervisor
# A trial during which other processes took more than this share of the server's or the
# driver's CPUs (their busy time minus what the tree and the driver used themselves).
FOREIGN_PERCENT = 10.0


def foreign_percent(trial: Trial) -> float | None:
    """The larger share of the server's or the driver's CPUs that other processes took
    during the trial's window (None when it was not measured)."""
    m = trial.machine
    if m is None:
        return None
    found = [
        v for v in (m.server_cpus_foreign_percent, m.driver_cpus_foreign_percent) if v is not None
    ]
    return max(found) if found else None


def left_unserved(trial: Trial) -> bool:
    """The one rule for "this trial left connections unserved" (tuning, guide, tests)."""
    return any(w.code in UNSERVED_CODES for w in trial.warnings)


def describe(values: list[float]) -> Describe:
    return Describe.model_validate(stats.describe(values))


def _unique(notices: list[Notice]) -> list[Notice]:
    seen: dict[str, Notice] = {}
    for n in notices:
        seen.setdefault(n.model_dump_json(), n)
    return [seen[k] for k in sorted(seen)]


def broadcast_rates(entry: PairResult) -> tuple[float, float, int] | None:
    """A ws-broadcast pair's medians: (messages in /s, deliveries out /s, members).

    Its req/s figure is deliveries per second; messages in are what the members sent.
    """
    trials = [t for t in entry.trials if t.valid and t.driver_figures.mode == "ws-broadcast"]
    if not trials:
        return None
    return (
        stats.median([t.driver_figures.messages_in_per_s or 0.0 for t in trials]),
        stats.median([t.driver_figures.deliveries_per_s or 0.0 for t in trials]),
        max(t.driver_figures.members or 0 for t in trials),
    )


def failures(summary: Summary) -> int:
    """Socket errors and unexpected statuses: what every driver counts as an error.

    Files written before statuses were checked against `expect.status` only have the
    non-2xx count, which stands in for it.
    """
    unexpected = summary.unexpected_status
    return summary.errors + (summary.non_2xx if unexpected is None else unexpected)


def summarise(entry: PairResult, rounds: list[DeploymentRound]) -> None:
    """Median and spread across valid trials; memory from trials and idle/after samples."""
    valid = [t for t in entry.trials if t.valid]
    invalid = [t for t in entry.trials if not t.valid]
    if invalid and entry.status == "ok":
        entry.status = "invalid"
        entry.reason = invalid[0].invalid or Notice(code="too_many_errors")
        if entry.reason.code == "protocol_refused":  # the server cannot, not a bad run
            entry.status = "incompatible"
    latency = {
        p: describe(
            [v for t in valid if (v := getattr(t.latency_ms, p)) is not None],
        )
        for p in LATENCIES
    }
    rps = describe([t.rps for t in valid])
    flags = []
    if rps.cv is not None and rps.cv > UNSTABLE_CV:
        flags.append(Notice(code=UNSTABLE, params={"cv": rps.cv, "n": rps.n, "limit": UNSTABLE_CV}))
    steals = [t.machine.steal_percent for t in valid if t.machine is not None]
    stolen = [x for x in steals if x > STEAL_PERCENT]
    if stolen:
        flags.append(
            Notice(code="steal", params={"max_percent": max(stolen), "trials": len(stolen)})
        )
    foreign = [f for t in valid if (f := foreign_percent(t)) is not None and f > FOREIGN_PERCENT]
    if foreign:
        flags.append(
            Notice(code="foreign_cpu", params={"max_percent": max(foreign), "trials": len(foreign)})
        )
    entry.summary = Summary(
        rps=rps,
        **{f"latency_{p}_ms": d for p, d in latency.items()},
        pss_peak_mb=describe([t.memory_mb.pss_peak for t in valid if t.memory_mb is not None]),
        errors=sum(t.error_count for t in entry.trials),
        non_2xx=sum(t.non_2xx for t in entry.trials),
        unexpected_status=sum(t.unexpected_status for t in entry.trials),
        warnings=_unique([w for t in entry.trials for w in t.warnings] + flags),
    )
    mem = [t.memory_mb for t in valid if t.memory_mb is not None]
    idle = [r.idle.pss for r in rounds if r.idle]
    after = [r.after.pss for r in rounds if r.after]
    entry.memory_mb = PairMemory(
        pss_idle=round(stats.median(idle), 2) if idle else None,
        pss_peak=max((m.pss_peak for m in mem), default=None),
        pss_mean=round(stats.median([m.pss_mean for m in mem]), 2) if mem else None,
        uss_peak=max((m.uss_peak for m in mem), default=None),
        uss_worker_peak=max((m.uss_worker_peak for m in mem), default=None),
        rss_peak=max((m.rss_peak for m in mem), default=None),
        pss_after=round(stats.median(after), 2) if after else None,
        processes=max((m.processes for m in mem), default=None),
        server_cpu_percent=describe([m.cpu_percent for m in mem]),
    )
    proxy = [t.proxy_memory_mb for t in valid if t.proxy_memory_mb is not None]
    entry.proxy_memory_mb = (
        ProxyMemory(
            pss_peak=max(m.pss_peak for m in proxy),
            rss_peak=max(m.rss_peak for m in proxy),
            cpu_percent=describe([m.cpu_percent for m in proxy]),
        )
        if proxy
        else None
    )


def per_100mb(entry: PairResult) -> float | None:
    """Median req/s per 100 MiB of the median trial's PSS peak: one statistic on both
    sides (the largest peak is the memory column's). None when either is missing."""
    rps, pss = entry.summary.rps.median, entry.summary.pss_peak_mb.median
    return rps / pss * 100 if rps and pss else None


def trial_value(trial: Trial, metric: str) -> float | None:
    """One trial's rps, latency percentile (p50 ... mean) or window memory figure."""
    if metric == "rps":
        return float(trial.rps)
    if metric in LATENCIES:
        v = getattr(trial.latency_ms, metric)
        return None if v is None else float(v)
    v = getattr(trial.memory_mb, metric) if trial.memory_mb is not None else None
    return float(v) if v else None


@dataclass(frozen=True)
class Pair:
    """One (server, scenario, concurrency, proxy) of one run, with derived figures."""

    run_id: str
    entry: PairResult
    tag: str = ""  # how reports name its run: a matrix cell's label, else the run id's end

    @property
    def run_tag(self) -> str:
        return self.tag or self.run_id[-6:]

    @property
    def server(self) -> str:
        return self.entry.server

    @property
    def proxy(self) -> str:
        return self.entry.proxy

    @property
    def protocol(self) -> str:
        return self.entry.protocol

    @property
    def front(self) -> str:
        """What the load met: "none" (direct, HTTP/1.1), "caddy", "caddy-tls",
        "caddy-tls/h2", "none/h2c": pairs are compared only front to like front."""
        return self.proxy if self.protocol == "h1" else f"{self.proxy}/{self.protocol}"

    @property
    def scenario(self) -> str:
        return self.entry.scenario

    @property
    def concurrency(self) -> int | None:
        return self.entry.concurrency

    @property
    def status(self) -> str:
        return self.entry.status

    @property
    def reason(self) -> Notice | None:
        return self.entry.reason

    @property
    def variant(self) -> dict[str, str]:
        return self.entry.variant

    @property
    def key(self) -> tuple[str, str, int | None, str, str]:
        variant = self.entry.variant_label
        if self.entry.config is not None:
            variant = f"{variant}{{{self.entry.config}}}"
        if self.entry.recycle is not None:
            variant = f"{variant} recycle={self.entry.recycle}".strip()
        return (self.server, self.scenario, self.concurrency, self.front, variant)

    @property
    def label(self) -> str:
        return self.entry.label

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.valid_trials)

    @property
    def valid_trials(self) -> list[Trial]:
        return [t for t in self.entry.trials if t.valid]

    def series(self, metric: str) -> list[float]:
        """Per-trial values of rps, p50 ... mean, or a window memory figure (pss_peak ...)."""
        return [v for t in self.valid_trials if (v := trial_value(t, metric)) is not None]

    def by_round(self, metric: str) -> dict[int, float]:
        """One value per round (the mean if a round has several valid trials), for
        pairing the two sides of the same round."""
        found: dict[int, list[float]] = {}
        for t in self.valid_trials:
            if (v := trial_value(t, metric)) is not None:
                found.setdefault(t.round, []).append(v)
        return {r: sum(v) / len(v) for r, v in found.items()}

    def median(self, metric: str) -> float | None:
        """The stored summary's median (computed by :func:`summarise`) of rps, a latency
        percentile or pss_peak."""
        s = self.entry.summary
        if metric == "rps":
            d = s.rps
        elif metric == "pss_peak":
            d = s.pss_peak_mb
        else:
            d = getattr(s, f"latency_{metric}_ms")
        return None if d.median is None else float(d.median)

    def memory(self, name: str) -> float | None:
        value = getattr(self.entry.memory_mb, name, None)
        return float(value) if isinstance(value, int | float) else None

    def rps_per_100mb(self) -> float | None:
        return per_100mb(self.entry)

    def warnings(self) -> list[Notice]:
        return list(self.entry.summary.warnings)

    def warning(self, code: str) -> Notice | None:
        return next((w for w in self.entry.summary.warnings if w.code == code), None)


@dataclass(frozen=True)
class Run:
    path: Path
    document: RunDocument
    pairs: list[Pair]
    tag: str = ""  # a matrix cell's label (--matrix), else ""

    @property
    def run_id(self) -> str:
        return self.document.run_id

    @property
    def run_tag(self) -> str:
        return self.tag or self.run_id[-6:]

    @property
    def plan(self) -> PlanRecord:
        return self.document.plan

    @property
    def environment(self) -> Environment:
        return self.document.environment

    def scenarios(self) -> list[str]:
        return list(dict.fromkeys(p.scenario for p in self.pairs))

    def by_scenario(self, scenario: str) -> list[Pair]:
        return [p for p in self.pairs if p.scenario == scenario]


def load_run(path: Path, tag: str = "") -> Run:
    """A benchmark results file; ResultsError (one sentence) for anything else."""
    document = store.load(path, kind="benchmark")
    if not document.results:
        raise store.ResultsError(f"{path} holds no results (an empty run)")
    return Run(
        path=path,
        document=document,
        pairs=[Pair(run_id=document.run_id, entry=e, tag=tag) for e in document.results],
        tag=tag,
    )


def load_cell(paths: list[Path], tag: str) -> Run:
    """A matrix cell's run: its results files (one per server, run back to back with
    the other cells') as one run, named by the cell."""
    runs = [load_run(p, tag=tag) for p in paths]
    first = runs[0]
    return Run(
        path=first.path,
        document=first.document,
        pairs=[pair for run in runs for pair in run.pairs],
        tag=tag,
    )


def load_one(path: Path) -> Run:
    """A run's file or a cost probe's file as one run (a report's or a guide's)."""
    return load_runs(path)[0] if store.kind_of(path) == "cost" else load_run(path)


def load_runs(path: Path) -> list[Run]:
    """A results file as runs: a matrix file (--matrix) gives each cell's run, named by
    its cell; a cost file (--cost) a run of no pairs; any other file, its own run."""
    try:
        head = path.read_text(encoding="utf-8")[:4000]
    except OSError:
        head = ""
    if store.kind_of(path) == "cost":  # a cost probe: pages and servers counted, no pairs
        return [Run(path=path, document=store.load(path, kind="cost"), pairs=[])]
    if '"kind": "matrix"' not in head:
        return [load_run(path)]
    document = store.load_matrix(path)
    runs = [
        load_cell([Path(f) for f in (c.run_files or [c.run_file])], c.label)  # type: ignore[list-item]
        for c in document.cells
        if c.status == "ok" and (c.run_files or c.run_file)
    ]
    if not runs:
        raise store.ResultsError(f"{path}: no cell of this matrix has results")
    return runs
