"""Settings variants (--axis): a combination the project's settings refuse is not run.

Each variant's variables are tried once before the run: a fresh interpreter with the
servers' environment plus the variant imports the settings (`django.setup()`). When
that fails (the sample project refuses DB_POOL=1 without PostgreSQL, for example), every
pair of the variant is recorded `incompatible` with the settings' own message.
"""

from __future__ import annotations

import subprocess
import sys

from djbench.launch.live import Deployment
from djbench.plan.project import Project
from djbench.plan.scenarios import Scenario
from djbench.results.model import Notice, PairResult
from djbench.run.runner import new_pair

Variant = tuple[tuple[str, str], ...]


def refusal(project: Project, variant: Variant) -> str | None:
    """None when the settings load with the variant's variables, else the last line
    the settings said."""
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=project.server_env(dict(variant)),
        cwd=project.directory,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else f"the settings did not load (exit code {done.returncode})"


def refused(project: Project, variants: list[Variant]) -> dict[Variant, str]:
    found = {}
    for variant in variants:
        if variant and (why := refusal(project, variant)) is not None:
            found[variant] = why
    return found


def recycle_refused(deployment: Deployment) -> str | None:
    """Why the deployment's server cannot recycle as --recycle asks (None: it can)."""
    if deployment.recycle is None:
        return None
    return deployment.server.recycling(deployment.recycle, deployment.workers).refused


def refused_entries(
    deployments: list[Deployment],
    scenarios: list[Scenario],
    concurrency: list[int | None],
    why: dict[Variant, str],
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
    return recycling + [
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
