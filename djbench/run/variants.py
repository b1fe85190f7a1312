"""Settings variants (--axis): a combination the project's settings refuse is not run.

Each variant's variables are tried once before the run: a fresh interpreter with the
servers' environment plus the variant imports the settings (`django.setup()`) and reads
back every setting in effect. When that fails (the sample project refuses DB_POOL=1
without PostgreSQL, for example), or when the settings in effect are those of an
earlier variant (a combination that changes nothing), every pair of the variant is
recorded `incompatible` with the reason.
"""

from __future__ import annotations

import subprocess
import sys

from djbench.launch.live import Deployment
from djbench.measure.drivers import DRIVERS, Driver
from djbench.plan.project import Project
from djbench.plan.scenarios import Scenario
from djbench.results.model import Notice, PairResult
from djbench.run.gates import new_pair
from djbench.servers import caddy

Variant = tuple[tuple[str, str], ...]


# Run in a fresh interpreter with the servers' environment plus the variant: it loads the
# settings and prints a digest of every setting in effect (object addresses removed, so
# that two processes with the same settings print the same digest).
_SNAPSHOT = """
import hashlib, re, django
django.setup()
from django.conf import settings
names = sorted(n for n in dir(settings) if n.isupper())
text = "\\n".join(f"{n}={getattr(settings, n)!r}" for n in names)
print("DJBENCH-SETTINGS", hashlib.sha256(re.sub(r" at 0x[0-9a-f]+", "", text).encode()).hexdigest())
"""
TIMEOUT_S = 120


def snapshot(project: Project, variant: Variant) -> tuple[str | None, str | None]:
    """(why the settings refused the variant, or None; the digest of the settings in
    effect, or None when they did not load)."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _SNAPSHOT],
            env=project.server_env(dict(variant)),
            cwd=project.directory,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"the settings did not load within {TIMEOUT_S} s", None
    if done.returncode == 0:
        found = [line.split()[1] for line in done.stdout.splitlines() if "DJBENCH-SETTINGS" in line]
        return None, found[-1] if found else None
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return (
        lines[-1] if lines else f"the settings did not load (exit code {done.returncode})"
    ), None


def refused(project: Project, variants: list[Variant]) -> dict[Variant, str]:
    """Variants not to run, with why: the settings refused them, or their settings in
    effect are those of an earlier variant (the sample ignores DB_CONN_MAX_AGE when the
    pool is on: DB_POOL=1,DB_CONN_MAX_AGE=60 would run DB_POOL=1,DB_CONN_MAX_AGE=0 again)."""
    found: dict[Variant, str] = {}
    seen: dict[str, Variant] = {}
    for variant in variants:
        if not variant:
            continue
        why, digest = snapshot(project, variant)
        if why is not None:
            found[variant] = why
        elif digest is not None and digest in seen:
            first = seen[digest]
            moot = [f"{k}={v}" for k, v in variant if (k, v) not in first]
            found[variant] = (
                f"{', '.join(moot)} changes no setting here: the settings in effect are those "
                f"of {','.join(f'{k}={v}' for k, v in first)}"
            )
        elif digest is not None:
            seen[digest] = variant
    return found


def recycle_refused(deployment: Deployment) -> str | None:
    """Why the deployment's server cannot recycle as --recycle asks (None: it can)."""
    if deployment.recycle is None:
        return None
    return deployment.server.recycling(deployment.recycle, deployment.workers).refused


def driver_refused(deployment: Deployment, driver: Driver | None) -> Notice | None:
    """Why the load cannot be spoken to this deployment's front end (None: it can),
    known before it starts: h2 is HTTP/2 over TLS (Caddy's, or the server's own when
    direct, where it has one) and h2c in clear (issue 27); and
    h2load's timed HTTP/1.1 run never ends against a server that closes every
    connection (nghttp2 1.52; djbench/measure/drivers/h2load.py)."""
    tls = deployment.proxy in caddy.TLS_PROXIES
    spec = deployment.server
    if deployment.proxy == caddy.NONE and deployment.protocol in ("h2", "h2c"):
        installed = spec.installed()
        own = spec.own.refused(installed[0] if installed else None, deployment.protocol)
        if own is not None:
            code = "no_own_tls" if deployment.protocol == "h2" else "no_own_h2c"
            return Notice(code=code, params={"server": spec.name, "why": own})
    if deployment.protocol == "h2" and not tls and deployment.proxy != "none":
        return Notice(code="h2_needs_tls")
    if deployment.protocol == "h2c" and tls:
        return Notice(code="h2c_is_cleartext")
    direct_h1 = deployment.protocol == "h1" and deployment.proxy == "none"
    if driver is not None and driver.needs_keep_alive and direct_h1 and not spec.keep_alive:
        others = " or ".join(n for n, d in DRIVERS.items() if not d.needs_keep_alive)
        message = (
            f"{driver.name}'s HTTP/1.1 run never ends against {spec.name}, which closes "
            f"every connection; measure HTTP/1.1 here with {others}, or behind --proxy caddy"
        )
        return Notice(code="driver_refused", params={"message": message})
    if driver is not None and not driver.reconnects and deployment.closes_connections:
        others = " or ".join(n for n, d in DRIVERS.items() if d.reconnects)
        message = (
            f"{deployment.label} closes every connection after its answer without saying "
            f"so; {driver.name} would count each close as a failed request: measure it with "
            f"{others} (a new connection per request, as the proxy in front of it does)"
        )
        return Notice(code="driver_refused", params={"message": message})
    return None


def refused_entries(
    deployments: list[Deployment],
    scenarios: list[Scenario],
    concurrency: list[int | None],
    why: dict[Variant, str],
    driver: Driver | None = None,
) -> list[PairResult]:
    """`incompatible` pairs for every deployment whose variant the settings refused, or
    whose server cannot recycle as asked."""
    recycling = [
        new_pair(
            d,
            s,
            c,
            status="incompatible",
            reason=Notice(
                code="recycle_unsupported",
                params={"recycle": d.recycle.label if d.recycle else "", "message": why_not},
            ),
        )
        for d in deployments
        if d.variant not in why and (why_not := recycle_refused(d))
        for s in scenarios
        for c in concurrency
    ]
    by_driver = [
        new_pair(
            d,
            s,
            c,
            status="incompatible",
            reason=notice,
        )
        for d in deployments
        if d.variant not in why and (notice := driver_refused(d, driver))
        for s in scenarios
        for c in concurrency
    ]
    return (
        recycling
        + by_driver
        + [
            new_pair(
                d,
                s,
                c,
                status="incompatible",
                reason=Notice(
                    code="settings_refused",
                    params={
                        "variant": ",".join(f"{k}={v}" for k, v in d.variant),
                        "message": why[d.variant],
                    },
                ),
            )
            for d in deployments
            if d.variant in why
            for s in scenarios
            for c in concurrency
        ]
    )
