"""What a run is given to work on, from its options, every refusal before anything starts:
the servers, proxies and scenarios chosen, the deployments built from them, the driver
and how it loads."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from djbench.launch.live import HOST, Deployment
from djbench.launch.process import (
    PortBusy,
    check_port_free,
)
from djbench.measure.drivers import DRIVERS, Driver, DriverError, having, pick
from djbench.measure.trial import LoadSettings
from djbench.plan import scenarios, tuning
from djbench.plan.jobplans import GROWTH_THRESHOLD_MB_H, SoakPlan
from djbench.plan.options import OptionError, choose, cpu_count, cpu_split
from djbench.plan.owncommands import OwnCommand
from djbench.plan.project import Project, current
from djbench.plan.runplan import RunOptions, soak_interval, variant_label
from djbench.results import store
from djbench.results.model import Notice, RunDocument
from djbench.run import owndeploy, remote, variants
from djbench.run.roundplan import Plan
from djbench.run.show import Show
from djbench.servers import SERVERS, ServerSpec, caddy


@dataclass
class Selection:
    project: Project
    scenario_file: scenarios.ScenarioFile
    scenarios: list[scenarios.Scenario]
    servers: list[ServerSpec]
    skipped: dict[str, Notice]  # server or proxy -> why it is not run
    proxies: list[str]
    server_cpus: tuple[int, ...]
    driver_cpus: tuple[int, ...]
    # The project's own server commands to run ([[deployment]] of the scenario file).
    own: list[OwnCommand] = field(default_factory=list)


def select(opts: RunOptions) -> Selection:
    project = current()
    if opts.target is not None:
        return select_target(project, opts)
    scenario_file, chosen = scenario_choice(project, opts)
    ours = {c.name: c for c in scenario_file.deployments}
    asked = choose("server", ",".join(opts.servers), [*SERVERS, *ours])
    names = [n for n in asked if n in SERVERS]
    own, skipped_own = owndeploy.runnable(
        [ours[n] for n in asked if n in ours] if asked else list(ours.values())
    )
    proxies = choose("proxy", ",".join(opts.proxies), caddy.PROXIES) or [caddy.NONE]
    server_cpus, driver_cpus = cpu_split(opts.cpus)
    skipped: dict[str, Notice] = dict(skipped_own)
    servers: list[ServerSpec] = []
    every = [SERVERS[n] for n in names] if asked else list(SERVERS.values())
    for spec in every:
        missing = spec.missing()
        if lacking := spec.lacks_part():
            version = (spec.installed() or ("?", ""))[0]
            skipped[spec.name] = Notice(
                code="lacks_part",
                params={"missing": lacking, "package": spec.executable, "version": version},
            )
        elif missing:
            skipped[spec.name] = Notice(
                code="not_installed", params={"missing": missing, "extra": spec.extra}
            )
        elif opts.workers > 1 and not spec.multi_worker:
            skipped[spec.name] = Notice(code="single_process", params={"workers": opts.workers})
        else:
            servers.append(spec)
    caddies = [p for p in proxies if p != caddy.NONE]
    if caddies and caddy.missing():
        if len(caddies) == len(proxies):
            raise OptionError(
                f"--proxy {caddies[0]}: caddy is not installed: pip install "
                f'"djbench[{caddy.EXTRA}]"'
            )
        for name in caddies:
            skipped[name] = Notice(code="caddy_missing")
        proxies = [caddy.NONE]
    if opts.port is not None:
        try:
            check_port_free(HOST, opts.port)
        except PortBusy as exc:
            raise OptionError(f"--port {opts.port}: {exc}") from None
    return Selection(
        project=project,
        scenario_file=scenario_file,
        scenarios=scenario_file.select(chosen or None),
        servers=servers,
        skipped=skipped,
        proxies=proxies,
        server_cpus=server_cpus,
        driver_cpus=driver_cpus,
        own=own,
    )


def scenario_choice(project: Project, opts: RunOptions) -> tuple[scenarios.ScenarioFile, list[str]]:
    """The scenario file (checked) and the scenarios --scenarios names in it."""
    path = opts.scenario_file or project.scenarios
    try:
        scenario_file = scenarios.load(Path(path))
    except scenarios.ScenarioError as exc:
        raise OptionError(str(exc)) from None
    return scenario_file, choose("scenario", ",".join(opts.scenarios), scenario_file.names())


def select_target(project: Project, opts: RunOptions) -> Selection:
    """--target: one stand-in server, the scenarios, nothing started."""
    from urllib.parse import urlsplit

    from djbench.servers import target_spec

    assert opts.target is not None
    if opts.servers or opts.proxies != ["none"]:
        raise OptionError("--target starts no server: leave out --servers and --proxy")
    host = urlsplit(opts.target).hostname or ""
    if not loopback(host) and not opts.allow_remote_target:
        raise OptionError(
            f"--target {opts.target} is outside loopback: add --allow-remote-target to "
            "send load there"
        )
    if opts.target_pid is not None and not loopback(host):
        raise OptionError("--target-pid samples a process on this machine: loopback targets only")
    if opts.recycle:
        raise OptionError("--target: --recycle needs a server djbench starts")
    # Options that would change nothing for a deployment djbench did not start, and
    # would then label identical pairs as variants the guide might rank (issue 25 item 5)
    unchanged = {
        "--axis": bool(opts.axes),
        "--workers": opts.workers != 1 or opts.workers_auto,
        "--threads": opts.threads is not None,
        "--config-from": bool(opts.config_from),
    }
    if given := [name for name, on in unchanged.items() if on]:
        raise OptionError(
            f"--target: {', '.join(given)} change nothing in a deployment djbench did not "
            "start; set them where it runs"
        )
    scenario_file, chosen = scenario_choice(project, opts)
    _, driver_cpus = cpu_split(opts.cpus)
    return Selection(
        project=project,
        scenario_file=scenario_file,
        scenarios=scenario_file.select(chosen or None),
        servers=[target_spec(opts.target)],
        skipped={},
        proxies=["none"],
        server_cpus=(),
        driver_cpus=driver_cpus,
    )


def loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost (names are resolved: a name may point anywhere)."""
    import ipaddress
    import socket

    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except (socket.gaierror, UnicodeError):
        return False
    return bool(addresses) and all(
        ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses
    )


def deployments(selection: Selection, opts: RunOptions) -> list[Deployment]:
    every = [
        Deployment(
            server=spec,
            proxy=proxy,
            workers=opts.workers,
            threads=opts.threads,
            cpus=selection.server_cpus,
            port=opts.port,
            variant=variant,
            recycle=recycle,
            target=opts.target,
            target_pid=opts.target_pid,
            host=opts.advertise_host or HOST,
            protocol=protocol,
        )
        for spec in selection.servers
        for proxy in selection.proxies
        for protocol in opts.protocols
        for variant in opts.variants()
        for recycle in opts.recycles()
    ]
    if opts.workers_auto:
        # --workers auto: each server's documented layout for the CPUs it has.
        cpus = cpu_count(selection.server_cpus)
        every = [
            deployment(d, tuning.recommended(d.server.tuning, cpus)) if d.server.multi_worker else d
            for d in every
        ]
    return every + owndeploy.deployments(
        selection.own, selection.proxies, selection.server_cpus, opts
    )


def runnable(
    selection: Selection, opts: RunOptions, show: Show, driver: Driver | None = None
) -> tuple[list[Deployment], list[Deployment], dict[variants.Variant, str]]:
    """(deployments to run, deployments not run, why their variant was refused)."""
    every = deployments(selection, opts)
    why = variants.refused(selection.project, opts.variants())
    for variant, message in why.items():
        show.refused(variant_label(variant), message)
    for d in every:
        notice = variants.driver_refused(d, driver)
        refused = variants.recycle_refused(d) or notice
        if d.variant not in why and refused:
            show.refused(d.label, refused)
    ok = [
        d
        for d in every
        if d.variant not in why
        and not variants.recycle_refused(d)
        and not variants.driver_refused(d, driver)
    ]
    return ok, [d for d in every if d not in ok], why


def driver_for(opts: RunOptions) -> Driver:
    """--driver, or with auto the builtin driver (the HTTP/2 one when HTTP/2 is asked),
    refused when it cannot do what the options ask of it."""
    http2 = opts.protocols != ["h1"]
    try:
        driver = pick(opts.driver, needs_rate=opts.rate is not None, http2=http2)
    except KeyError:
        raise OptionError(
            f"unknown driver {opts.driver!r}; valid: auto, {', '.join(DRIVERS)}"
        ) from None
    except DriverError as exc:
        raise OptionError(str(exc)) from None
    if http2 and not driver.http2:
        raise OptionError(
            f"--protocol h2/h2c needs --driver {having('http2')} or auto (the other drivers "
            "speak HTTP/1.1)"
        )
    if opts.new_connection_every and not driver.reconnects:
        raise OptionError(
            f"--new-connection-every is the {having('reconnects')} driver's: leave out "
            f"--driver ({driver.name} keeps its connections)"
        )
    return driver


def check_mixes(driver: Driver, chosen: list[scenarios.Scenario]) -> None:
    """A mix needs a driver that draws its pages by weight: refused before anything starts."""
    mixed = [s.name for s in chosen if s.mix]
    if mixed and not driver.mixes:
        raise OptionError(
            f"{', '.join(mixed)} is a mix of pages, which --driver {having('mixes')} loads "
            f"({driver.name} sends one request): leave out --driver, or drop the mix"
        )


def load_settings(opts: RunOptions, selection: Selection) -> LoadSettings:
    """How every trial loads its server, from the options."""
    return LoadSettings(
        duration=opts.duration,
        warmup=opts.warmup,
        driver_cpus=selection.driver_cpus,
        rate=opts.rate,
        max_error_rate=opts.max_error_rate,
        series=None if opts.soak_s is None else soak_interval(opts.soak_s),
        growth_threshold=(
            opts.job.growth_threshold if isinstance(opts.job, SoakPlan) else GROWTH_THRESHOLD_MB_H
        ),
        driver_workers=remote.driver_workers(opts),
        new_connection_every=opts.new_connection_every,
        request_timeout=opts.request_timeout,
        seed=opts.seed,
    )


def chosen_scenarios(selection: Selection, opts: RunOptions) -> list[scenarios.Scenario]:
    """The scenarios to run: as given, else the profile's set; a soak's own."""
    chosen = selection.scenarios
    default_set = selection.scenario_file.profiles.get(opts.profile)
    if not opts.scenarios_given and default_set:
        chosen = selection.scenario_file.select(default_set)
    if opts.soak_s is not None:
        chosen = soak_scenarios(selection, opts, chosen)
    return chosen


def soak_scenarios(
    selection: Selection, opts: RunOptions, chosen: list[scenarios.Scenario]
) -> list[scenarios.Scenario]:
    """A soak loads HTTP scenarios: those asked, else the file's `soak` profile, else the
    first HTTP scenario of the default profile (a soak per scenario multiplies its time)."""
    if opts.scenarios_given:
        ws = [s.name for s in chosen if s.kind != "http"]
        if ws:
            raise OptionError(
                f"--soak loads HTTP scenarios only; {', '.join(ws)} "
                f"{'is a WebSocket scenario' if len(ws) == 1 else 'are WebSocket scenarios'}"
            )
        return chosen
    profiles = selection.scenario_file.profiles
    if "soak" in profiles:
        return [s for s in selection.scenario_file.select(profiles["soak"]) if s.kind == "http"]
    default = profiles.get("default")
    pool = selection.scenario_file.select(default) if default else selection.scenarios
    http = [s for s in pool if s.kind == "http"]
    if not http:
        raise OptionError(
            "--soak: the scenario file has no HTTP scenario; name one with --scenarios"
        )
    return http[:1]


def from_tuning(opts: RunOptions, templates: list[Deployment], show: Show) -> list[Deployment]:
    """--config-from RUN: each server at the configuration that tuning run found best."""
    assert opts.config_from is not None
    raw = Path(opts.config_from)
    path = raw if raw.suffix == ".json" else Path(opts.output) / f"{opts.config_from}.json"
    try:
        document = store.load(path, kind="benchmark")
    except store.ResultsError as exc:
        raise OptionError(f"--config-from: {exc}") from None
    if document.tuning is None or not document.tuning.best:
        raise OptionError(f"--config-from: {path} is not a --tune run with a best configuration")
    found = configured(document, templates)
    for d in templates:
        if d.own is None and d.server.name not in document.tuning.best:
            show.line(f"skipped {d.server.name}: not tuned in {path.name}")
    if not any(d.own is None for d in found):
        raise OptionError(f"--config-from: {path} tuned none of the servers asked")
    return found


def target_announcement(opts: RunOptions, plan: Plan) -> str:
    """Where the load goes, how much and for how long: said before it starts."""
    per_trial = opts.duration + opts.warmup
    total = per_trial * plan.total_trials()
    return (
        f"Sending load to {opts.target} (not started by djbench): {len(plan.scenarios)} "
        f"scenario(s) x {', '.join(str(c) for c in plan.concurrency)} connection(s) x "
        f"{plan.trials} trial(s) of {opts.duration:g} s after {opts.warmup:g} s warm-up: "
        f"about {total:.0f} s of load"
        + (f" at {opts.rate:g} req/s" if opts.rate else " (closed loop: as fast as it answers)")
    )


def deployment(template: Deployment, candidate: tuning.Candidate) -> Deployment:
    return dataclasses.replace(
        template,
        workers=candidate.workers,
        threads=candidate.threads,
        knobs=candidate.knobs,
        config=candidate.label,
    )


def configured(document: RunDocument, templates: list[Deployment]) -> list[Deployment]:
    """--config-from: each server at the configuration a tuning run found best."""
    if document.tuning is None or not document.tuning.best:
        return []
    found = []
    for template in templates:
        if template.own is not None:  # the project's own: measured as written, beside
            found.append(template)
            continue
        config = document.tuning.best.get(template.server.name)
        if config is None:
            continue
        candidate = next(
            c
            for c in document.tuning.candidates
            if c.server == template.server.name and c.config == config
        )
        found.append(
            deployment(
                template,
                tuning.Candidate(
                    candidate.workers, candidate.threads, tuple(candidate.knobs.items())
                ),
            )
        )
    return found
