"""The project's own deployments in a run (its [[deployment]]s: djbench.plan.owncommands):
which can run here, and the deployments they make."""

from __future__ import annotations

from djbench.launch.live import HOST, Deployment
from djbench.plan.owncommands import OwnCommand
from djbench.plan.runplan import RunOptions
from djbench.results.model import Notice
from djbench.servers import SERVERS


def runnable(asked: list[OwnCommand]) -> tuple[list[OwnCommand], dict[str, Notice]]:
    """The project's own commands that can run here, and why the others cannot (a
    server djbench does not know, or one not installed: the project's pin is kept)."""
    kept: list[OwnCommand] = []
    skipped: dict[str, Notice] = {}
    for own in asked:
        spec = SERVERS.get(own.server)
        if spec is None:
            skipped[own.name] = Notice(
                code="own_unknown", params={"server": own.server, "valid": list(SERVERS)}
            )
        elif missing := spec.missing():
            skipped[own.name] = Notice(
                code="not_installed", params={"missing": missing, "extra": spec.extra}
            )
        else:
            kept.append(own)
    return kept, skipped


def deployments(
    own: list[OwnCommand], proxies: list[str], cpus: tuple[int, ...], opts: RunOptions
) -> list[Deployment]:
    """Each own command behind each proxy, in each settings variant: its layout and
    recycling as written, HTTP/1.1 only, on the same CPUs as djbench's layouts."""
    return [
        Deployment(
            server=SERVERS[c.server],
            proxy=proxy,
            workers=c.workers or 1,
            threads=c.threads,
            cpus=cpus,
            port=opts.port,
            variant=variant,
            host=opts.advertise_host or HOST,
            own=c,
        )
        for c in own
        for proxy in proxies
        for variant in opts.variants()
    ]
