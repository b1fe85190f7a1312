"""runbench's options, parsed and checked once into a typed value that flows down.

The management command turns argparse's dict into :class:`RunOptions` (one-line
:class:`~djbench.plan.options.OptionError` for anything wrong) and nothing below it
reads the dict. The same value is saved in the results file and read back by
``--resume``.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from djbench.plan.jobplans import (
    CAPACITY_SLO_MS,
    COST_SEEDS,
    GROWTH_THRESHOLD_MB_H,
    CapacityPlan,
    ChurnPlan,
    CostPlan,
    JobPlan,
    RoundsPlan,
    SoakPlan,
    SweepPlan,
    TunePlan,
    steady_window,
)
from djbench.plan.loadtarget import new_connection_every, protocols_of, remote_options, target_url
from djbench.plan.options import OptionError, positive_ints, redact, split_list
from djbench.plan.profiles import CAPACITY_BUDGET_S as CAPACITY_BUDGET_S
from djbench.plan.profiles import PROFILES as PROFILES
from djbench.plan.profiles import QUICK_BUDGET_S as QUICK_BUDGET_S
from djbench.plan.recycle import Recycle, parse_axis, parse_duration, parse_one
from djbench.plan.tuning import OBJECTIVES

MAX_DURATION = 600.0  # seconds per timed window: every load loop is bounded
PAIRINGS = ("alternate", "sequential")  # --pairing, the default first
MAX_COST_SEEDS = 10  # a page's count per seed takes 10-30 s under Valgrind
# --churn: one window per kind of event, a third of it steady before the event (its
# rate is djbench.run.modes.churn.CHURN_RATE's)
CHURN_WINDOW_S = 12.0
CHURN_KINDS = ("reload", "kill-worker", "recycle")
MAX_VARIANTS = 16  # combinations of --axis values: every run is bounded
_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


class RunOptions(BaseModel):
    """What a runbench invocation asked for (profile values already applied)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    servers: list[str] = []  # empty: every installed server
    scenarios: list[str] = []  # empty: the profile's set from the scenario file
    scenario_file: str | None = None
    proxies: list[str] = ["none"]
    workers: int = 1
    threads: int | None = None
    cpus: str = "auto"
    port: int | None = None
    profile: str = "default"
    concurrency: list[int] = [32]
    duration: float = 2.0
    warmup: float = 1.0
    trials: int = 3
    driver: str = "auto"
    # --protocol: an axis of h1, h2 (HTTP/2 over TLS, by ALPN: through --proxy caddy-tls)
    # and h2c (HTTP/2 in clear, prior knowledge); HTTP/2 is spoken by h2load (issue 27)
    protocols: list[str] = ["h1"]
    rate: float | None = None
    # --new-connection-every N: the builtin driver opens a new connection after each
    # connection's Nth answer (with TLS, a handshake each time: its cost, issue 27)
    new_connection_every: int | None = None
    max_error_rate: float = 0.01
    ws_idle: int = 1000
    seed: int | None = None
    output: str = "bench-results"
    setup: bool = True
    # Settings axes: environment variable -> values; every combination is a variant.
    axes: dict[str, list[str]] = {}
    # --soak: one long window per pair (seconds), sampled as a time series.
    # --driver locust: local worker processes, or a master that lasts the whole run
    # listening at HOST[:PORT] for this many remote workers, waited for so long
    locust_workers: int = 1
    locust_master_bind: str | None = None
    locust_expect_workers: int = 1
    locust_join_timeout: float = 120.0
    # --advertise-host: the address servers djbench starts are bound to and loaded at
    # (the server as the load machines see it); None: loopback
    advertise_host: str | None = None
    # Load to (or a Locust master on) an address outside loopback needs saying so.
    allow_remote_target: bool = False
    # --target URL: an already-running deployment (no server started), and --target-pid
    # the leader of its process tree on this machine (memory is sampled only then).
    target: str | None = None
    target_pid: int | None = None
    config_from: str | None = None  # a tuning run whose best configurations to rerun
    workers_auto: bool = False  # --workers auto: each server's recommended layout
    # The job and its own options (djbench.plan.jobplans): a plain run's by default.
    job: JobPlan = RoundsPlan()
    # --recycle: worker-recycling settings (labels, djbench.plan.recycle); empty: not
    # given, every server's recycling off as in any benchmark.
    recycle: list[str] = []
    # --database / --redis as given, a URL's password written as ***: a record of what
    # the run was asked for (the URLs themselves reach every process as DATABASE_URL and
    # REDIS_URL), so that --resume can insist on the same services.
    database: str | None = None
    redis: str | None = None
    # --budget without --matrix: the run's wall time; rounds beyond --trials go to the
    # deployments whose rank is still open (djbench.run.budget). None: --trials rounds.
    # The default profile's is PROFILES["default"]["budget"] unless --trials is given.
    budget: float | None = None
    # --on-inconclusive: a gate's open question (a matrix pair undecided, a threshold
    # too close to call) passes (said in one line) or fails (exit 1).
    on_inconclusive: Literal["pass", "fail"] = "pass"
    # A plain run's profile fitted to the pages by a pilot (djbench.run.pilot_fit): on when
    # neither --concurrency, --duration nor --rate was given; what the pilot chose is
    # then written back here (concurrency, duration, request_timeout) for --resume.
    fit: bool = False
    request_timeout: float | None = None  # None: djbench.plan.fitting.request_timeout
    # --pairing: rounds with their deployments alive side by side, windows alternated
    # page by page (djbench.run.side_by_side: which rounds), or back to back.
    pairing: Literal["alternate", "sequential"] = "alternate"

    def variants(self) -> list[tuple[tuple[str, str], ...]]:
        """Every combination of the axes' values (one empty variant without axes)."""
        names = list(self.axes)
        return [
            tuple(zip(names, values, strict=True))
            for values in itertools.product(*(self.axes[n] for n in names))
        ]

    def recycles(self) -> list[Recycle | None]:
        """The --recycle settings ([None] when not given: recycling off, not labelled)."""
        return [parse_one(label) for label in self.recycle] or [None]

    @property
    def scenarios_given(self) -> bool:
        return bool(self.scenarios)

    @property
    def soak_s(self) -> float | None:
        """A soak's window (None: not a soak): the one job field other parts read."""
        return self.job.seconds if isinstance(self.job, SoakPlan) else None


def tune_objective(options: dict[str, Any]) -> str:
    """--objective, for --tune only; `--capacity --tune` tunes by capacity."""
    given = options.get("objective")
    if given is not None and given not in OBJECTIVES:
        raise OptionError(f"--objective {given!r}; valid: {', '.join(OBJECTIVES)}")
    if options.get("capacity") and options.get("tune"):
        if given not in (None, "capacity"):
            raise OptionError(
                "--capacity --tune tunes by capacity: leave out --objective or give capacity"
            )
        return "capacity"
    return str(given or "rps")


def churn_kinds(options: dict[str, Any]) -> list[str]:
    """--churn KIND[,KIND]: the events, checked; what it would ignore refused."""
    raw = options.get("churn")
    if raw is None:
        return []
    kinds = split_list(str(raw))
    wrong = [k for k in kinds if k not in CHURN_KINDS]
    if wrong or not kinds:
        raise OptionError(f"--churn takes {', '.join(CHURN_KINDS)} (comma-separated), got {raw!r}")
    return list(dict.fromkeys(kinds))


def soak_threshold(options: dict[str, Any]) -> float:
    value = options.get("soak_threshold")
    if value is None:
        return GROWTH_THRESHOLD_MB_H
    if not 0 <= value <= 10_000:
        raise OptionError("--soak-threshold takes MB per hour from 0 to 10000, e.g. 10")
    return float(value)


# The jobs that search each pair in their own way (djbench.run.flags.JOBS names them),
# budgeted by the whole command's wall time; the jobs that size their own load.
SEARCHES = ("capacity", "sweep", "churn")
OWN_LOAD = ("tune", *SEARCHES, "matrix")


def plain_budget(options: dict[str, Any], defaults: dict[str, Any], job: str) -> float | None:
    """A run's --budget: as given; else the profile's when the rounds are left to it (no
    --trials; not a soak, a tuning search or a matrix, which budget their own)."""
    if job == "matrix":
        return None
    if options.get("budget"):
        return parse_duration("--budget", str(options["budget"]))
    if job in SEARCHES:
        return QUICK_BUDGET_S if options.get("quick") else CAPACITY_BUDGET_S
    if options.get("trials") is not None or job == "tune":
        return None
    budget: float | None = defaults["budget"]
    return budget


def from_command(options: dict[str, Any], job: str) -> RunOptions:
    """Check every value of runbench's argparse dict for `job` (the one djbench.run.cli
    found, by name in djbench.run.flags.JOBS); OptionError names the bad one."""
    profile = "quick" if options.get("quick") else "default"
    defaults = PROFILES[profile]

    def pick(key: str) -> Any:
        value = options.get(key)
        return defaults[key] if value is None else value

    concurrency = (
        positive_ints("--concurrency", str(options["concurrency"]))
        if options.get("concurrency") is not None
        else list(defaults["concurrency"])
    )
    soak = options.get("soak")
    soak_s = None if soak is None else parse_duration("--soak", str(soak))
    if soak_s is not None:
        if options.get("duration") is not None:
            raise OptionError("--soak sets the window's length; leave out --duration")
        profile, defaults = "soak", {**defaults, "trials": 1, "duration": soak_s, "budget": None}
    if job == "churn":
        defaults = {**defaults, "duration": CHURN_WINDOW_S}
    if job == "tune" and soak_s is None:
        # Many short windows: the search gives the open questions more of them.
        defaults = {**defaults, "duration": 1.5, "warmup": 0.5}
    trials, duration, warmup = pick("trials"), pick("duration"), pick("warmup")
    if trials < 1:
        raise OptionError("--trials takes a whole number of at least 1")
    if soak_s is None and not 0 < duration <= MAX_DURATION:
        raise OptionError(f"--duration takes seconds above 0 and at most {MAX_DURATION:.0f}")
    if not 0 <= warmup <= MAX_DURATION:
        raise OptionError(f"--warmup takes seconds from 0 to {MAX_DURATION:.0f}")
    workers, workers_auto = workers_of(options)
    objective, slo = search_options(options, job)
    scenario_file = options.get("scenario_file")
    axes = parse_axes(options.get("axis"))
    return RunOptions(
        servers=split_list(options.get("servers")),
        scenarios=split_list(options.get("scenarios")),
        scenario_file=None if scenario_file is None else str(scenario_file),
        proxies=proxies_of(options),
        workers=workers,
        **bounded_numbers(options),
        cpus=options.get("cpus") or "auto",
        profile=profile,
        concurrency=concurrency,
        duration=duration,
        warmup=warmup,
        trials=trials,
        driver=options.get("driver") or "auto",
        protocols=protocols_of(options),
        new_connection_every=new_connection_every(options),
        seed=options.get("seed"),
        output=str(options.get("output") or "bench-results"),
        setup=not options.get("no_setup", False),
        axes=axes,
        **remote_options(options),
        target=target_url(options.get("target")),
        config_from=options.get("config_from"),
        workers_auto=workers_auto,
        target_pid=options.get("target_pid"),
        job=job_plan(options, job, soak_s, objective, slo),
        recycle=[r.label for r in parse_axis(options.get("recycle"))],
        budget=plain_budget(options, defaults, job),
        database=redact(str(options["database"])) if options.get("database") else None,
        redis=redact(str(options["redis"])) if options.get("redis") else None,
        on_inconclusive=on_inconclusive(options),
        fit=fits(options, job, soak_s),
        pairing=pairing(options),
    )


def fits(options: dict[str, Any], job: str, soak_s: float | None) -> bool:
    """Whether a plain run's profile is fitted to the pages (djbench.run.pilot_fit): not
    when the load's size or pace was given, nor for a job that sets its own."""
    given = any(options.get(k) is not None for k in ("concurrency", "duration", "rate"))
    return not given and soak_s is None and job not in OWN_LOAD


def pairing(options: dict[str, Any]) -> Literal["alternate", "sequential"]:
    """--pairing, checked (a plain run's rounds, a matrix's cells)."""
    given = options.get("pairing") or PAIRINGS[0]
    if given not in PAIRINGS:
        raise OptionError(f"--pairing {given!r}; valid: {', '.join(PAIRINGS)}")
    return "sequential" if given == "sequential" else "alternate"


def on_inconclusive(options: dict[str, Any]) -> Literal["pass", "fail"]:
    given = options.get("on_inconclusive") or "pass"
    if given not in ("pass", "fail"):
        raise OptionError(f"--on-inconclusive {given!r}; valid: pass, fail")
    return "fail" if given == "fail" else "pass"


def job_plan(
    options: dict[str, Any], job: str, soak_s: float | None, objective: str, slo: float | None
) -> JobPlan:
    """The job's own options, checked."""
    threshold = soak_threshold(options)
    if job == "tune":
        default = f"{QUICK_BUDGET_S:g}s" if options.get("quick") else "15m"
        budget = parse_duration("--tune-budget", str(options.get("tune_budget") or default))
        return TunePlan(
            budget_s=budget, objective=objective, slo_p99=slo, steady_s=steady_window(options)
        )
    if job == "churn":
        return ChurnPlan(kinds=churn_kinds(options))
    if job == "capacity":
        slo = CAPACITY_SLO_MS if slo is None else slo
        return CapacityPlan(slo_p99=slo, steady_s=steady_window(options))
    if job == "sweep":
        return SweepPlan()
    if job == "cost":
        return CostPlan(seeds=cost_seeds(options.get("cost_seeds")))
    if soak_s is not None:
        return SoakPlan(seconds=soak_s, growth_threshold=threshold)
    return RoundsPlan()


def cost_seeds(given: int | None) -> int:
    """--cost-seeds (--cost, a matrix's cost phase), checked."""
    seeds = given or COST_SEEDS
    if not 1 <= seeds <= MAX_COST_SEEDS:
        raise OptionError(f"--cost-seeds takes a whole number from 1 to {MAX_COST_SEEDS}")
    return seeds


def search_options(options: dict[str, Any], job: str) -> tuple[str, float | None]:
    """--tune's objective and the p99 target (--slo-p99, 100 ms for a capacity search),
    with what a search would ignore refused."""
    objective = tune_objective(options)
    slo = options.get("slo_p99")
    if slo is not None and slo <= 0:
        raise OptionError("--slo-p99 takes milliseconds above 0")
    if job == "capacity" or objective == "capacity":
        slo = CAPACITY_SLO_MS if slo is None else slo
    if job == "tune" and proxies_of(options) != ["none"]:
        raise OptionError("--tune searches one deployment per server: leave out --proxy caddy")
    return objective, slo


def proxies_of(options: dict[str, Any]) -> list[str]:
    """--proxy as given: none unless told (names are checked against PROXIES later)."""
    return split_list(options.get("proxy") or "none") or ["none"]


def workers_of(options: dict[str, Any]) -> tuple[int, bool]:
    """--workers: a whole number, or auto (then 1 here, and True: resolved per run)."""
    raw = options.get("workers") or 1
    auto = str(raw) == "auto"
    try:
        workers = 1 if auto else int(raw)
    except (TypeError, ValueError):
        raise OptionError(f"--workers takes auto or a whole number, got {raw!r}") from None
    if workers < 1:
        raise OptionError("--workers takes auto or a whole number of at least 1")
    return workers, auto


def bounded_numbers(options: dict[str, Any]) -> dict[str, Any]:
    """The options that are a number within bounds, checked: RunOptions' fields."""
    threads = options.get("threads")
    if threads is not None and threads < 1:
        raise OptionError("--threads takes a whole number of at least 1")
    rate = options.get("rate")
    if rate is not None and rate <= 0:
        raise OptionError("--rate takes requests per second above 0")
    max_error_rate = options.get("max_error_rate")
    max_error_rate = 0.01 if max_error_rate is None else max_error_rate
    if not 0 <= max_error_rate <= 1:
        raise OptionError("--max-error-rate takes a fraction from 0 to 1, e.g. 0.01")
    ws_idle = options.get("ws_idle")
    ws_idle = 1000 if ws_idle is None else ws_idle
    if ws_idle < 0 or ws_idle > 20000:
        raise OptionError("--ws-idle takes a count from 0 to 20000")
    port = options.get("port")
    if port is not None and not 0 < port < 65536:
        raise OptionError("--port takes a port number from 1 to 65535")
    return {
        "threads": threads,
        "rate": rate,
        "max_error_rate": max_error_rate,
        "ws_idle": ws_idle,
        "port": port,
    }


def parse_axes(raw: str | None) -> dict[str, list[str]]:
    """--axis "DB_POOL=0,1;MIDDLEWARE_PROFILE=default,lean" -> {name: [values]}."""
    axes: dict[str, list[str]] = {}
    for part in (raw or "").split(";"):
        if not part.strip():
            continue
        name, sep, values = part.partition("=")
        name = name.strip()
        if not sep or not _NAME.match(name):
            raise OptionError(
                f"--axis takes NAME=V1,V2[;NAME2=...] with NAME an environment variable "
                f"in capitals, got {part.strip()!r}"
            )
        if name in axes:
            raise OptionError(f"--axis names {name} twice")
        found = list(dict.fromkeys(split_list(values)))
        if len(found) < 1:
            raise OptionError(f"--axis {name}: give at least one value")
        axes[name] = found
    combinations = math.prod(len(v) for v in axes.values()) if axes else 1
    if combinations > MAX_VARIANTS:
        raise OptionError(
            f"--axis makes {combinations} combinations; at most {MAX_VARIANTS} per run"
        )
    return axes


def soak_interval(seconds: float) -> float:
    """A soak's time-line slice: 1 s, longer for soaks past 5 minutes (300 slices)."""
    return round(max(1.0, seconds / 300), 1)


def variant_label(variant: tuple[tuple[str, str], ...]) -> str:
    return ",".join(f"{k}={v}" for k, v in variant)
