"""Granian: a parent and N workers, each a Rust runtime with Python threads; one entry
per interface, each with its own deploy file (deploy/granian-wsgi.args, -asgi.args).

Facts checked with Granian 2.8.9:
- Its own TLS: --ssl-certificate/--ssl-keyfile (the key in PKCS#8 only); --http auto
  (its default) offers both by ALPN and takes h2c by prior knowledge.
- granian/server/common.py: signal_handler_reload: SIGHUP respawns the workers.
- Recycling: --workers-lifetime S (at least 60 s) and --workers-max-rss MB (checked
  every --rss-sample-interval, default 30 s); no request count.
- Its blocking threads serve a WSGI app's requests (under ASGI they only run sync calls).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from djbench.plan.owncommands import OwnCommand
from djbench.plan.recycle import Recycle
from djbench.plan.tuning import Space
from djbench.servers.commandline import number, option, started
from djbench.servers.entry import (
    Family,
    Features,
    Interface,
    Launch,
    LaunchConfig,
    Listen,
    OwnProtocols,
    RecycleFlags,
    ServerSpec,
    appended,
    listening,
    protocol_argv,
    recycle_argv,
    recycle_mapped,
    threads_of,
)

RECYCLE_FLAGS = ("--workers-lifetime", "--workers-max-rss")
ENTRY = {"asgi": "granian-asgi", "wsgi": "granian-wsgi"}  # by its --interface


def recycle(recycle: Recycle, workers: int) -> RecycleFlags:
    if recycle.off:
        return RecycleFlags(strip=RECYCLE_FLAGS)
    if recycle.lifetime is not None and recycle.lifetime < 60:
        return RecycleFlags(refused="granian's --workers-lifetime is at least 60 s")
    found = recycle_mapped(
        "granian",
        recycle,
        {"max-rss": ["--workers-max-rss"], "lifetime": ["--workers-lifetime"]},
        "by memory (--workers-max-rss) and lifetime (--workers-lifetime)",
    )
    return RecycleFlags(
        argv=found.argv, ignored=found.ignored, refused=found.refused, strip=RECYCLE_FLAGS
    )


def builder(interface: Interface) -> Callable[[ServerSpec, LaunchConfig], Launch]:
    def build(spec: ServerSpec, config: LaunchConfig) -> Launch:
        argv = [*listening(spec, config), *recycle_argv(spec, config, [])]
        threads = None
        if interface == "wsgi":
            threads = threads_of(spec, config)
            argv += ["--blocking-threads", str(threads)]
        argv += [*config.extra_args, *protocol_argv(spec, config)]
        argv.append(config.wsgi_app if interface == "wsgi" else config.asgi_app)
        return Launch(argv=argv, threads=threads)

    return build


def tuned(spec: ServerSpec, workers: int, threads: int | None, knobs: dict[str, str]) -> list[str]:
    lines = [f"--workers {workers}"]
    if spec.interface == "wsgi" and threads is not None:
        lines.append(f"--blocking-threads {threads}")
    if "runtime_threads" in knobs:
        lines.append(f"--runtime-threads {knobs['runtime_threads']}")
    return lines


def recognise(root: Path, words: list[str], source: str, wsgi_app: str) -> OwnCommand | None:
    interface = option(words, "--interface") or "rsgi"  # Granian's own default
    server = ENTRY.get(interface)
    if server is None:
        return None
    threads = number(option(words, "--blocking-threads")) if interface == "wsgi" else None
    return started(server, words, source, threads)


# Under Valgrind (runbench --cost --servers, djbench.measure.server_cost): Granian 2.x's
# worker runs (its Rust runtime's threads serialised), and per request of health-sync
# its WSGI tree spent 943,258 instructions, 28,010 beyond Django's handler (2026-12-06);
# in two of three runs its worker wrote no count at all ("brk segment overflow in thread
# #1", then nothing): a finding of that server, the others go on.
FAMILY = Family(
    name="granian",
    executable="granian",
    extra="granian",
    deploy_file="granian-*.args",
    packages=("granian",),
    features=Features(
        http2="yes (--http auto|2)",
        http3="no",
        reload="--reload for development; SIGHUP respawns workers",
        recycle="by lifetime (--workers-lifetime) and by memory (--workers-max-rss)",
        process_model="parent + N workers, each a Rust runtime with Python threads",
        checked_with="granian 2.8.9",
        reload_signal="SIGHUP",
    ),
    own=OwnProtocols(tls=("--ssl-certificate", "{cert}", "--ssl-keyfile", "{key}")),
    listen=Listen(
        flags=("--host", "--port", "--uds"), argv=("--host", "{host}", "--port", "{port}")
    ),
    recycle=recycle,
    tuned=tuned,
    tuned_file=appended("#"),
    recognise=recognise,
    knobs={"runtime_threads": "--runtime-threads"},
)

ENTRIES = (
    ServerSpec(
        name="granian-wsgi",
        family=FAMILY,
        tuning=Space(threads=(1, 4, 16), layout_threads=4),  # blocking threads
        interface="wsgi",
        websocket=False,
        requires=("granian",),
        deploy_override="granian-wsgi.args",
        summary="Granian (Rust HTTP stack), WSGI interface, blocking thread pool",
        build=builder("wsgi"),
        default_threads=4,
    ),
    ServerSpec(
        name="granian-asgi",
        family=FAMILY,
        tuning=Space(knob=("runtime_threads", ("1", "2"))),
        interface="asgi",
        websocket=True,
        requires=("granian",),
        deploy_override="granian-asgi.args",
        summary="Granian (Rust HTTP stack), ASGI interface",
        build=builder("asgi"),
    ),
)
