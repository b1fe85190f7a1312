"""Daphne (Twisted), the Channels project's server: one process (deploy/daphne.args).

Facts checked with Daphne 4.2.3:
- Its own TLS is a Twisted endpoint, -e ssl:PORT:interface=HOST:privateKey=K:certKey=C
  (a colon in a value is written \\:); HTTP/2 when Twisted finds h2 and priority. With
  TLS, the endpoint string is the listening socket: -b/-p (ours or the deploy file's)
  would open a second, plain one.
- No graceful reload (SIGHUP would end it) and no worker recycling: restart it.
- Its Twisted caps pyOpenSSL, which can move `cryptography` back when the extra is
  installed into a project that has a newer one.
"""

from __future__ import annotations

from pathlib import Path

from djbench.plan.owncommands import OwnCommand
from djbench.plan.recycle import Recycle
from djbench.plan.tuning import ONE_PROCESS
from djbench.servers.commandline import started
from djbench.servers.entry import (
    Family,
    Features,
    Launch,
    LaunchConfig,
    Listen,
    OwnProtocols,
    RecycleFlags,
    ServerSpec,
    appended,
    args_file,
    exe,
    protocol_argv,
    without,
)


def recycle(recycle: Recycle, workers: int) -> RecycleFlags:
    if recycle.off:
        return RecycleFlags()
    return RecycleFlags(refused="daphne has no worker recycling (restart it from outside)")


def build(spec: ServerSpec, config: LaunchConfig) -> Launch:
    if config.tls is None:
        opening = [*args_file(spec, config), "-b", config.host, "-p", str(config.port)]
    else:
        opening = without(args_file(spec, config), ("-b", "-p", "--bind", "--port"))
    return Launch(argv=[exe(spec), *opening, *protocol_argv(spec, config), config.asgi_app])


def tuned(spec: ServerSpec, workers: int, threads: int | None, knobs: dict[str, str]) -> list[str]:
    return []  # one process: nothing to write


def recognise(root: Path, words: list[str], source: str, wsgi_app: str) -> OwnCommand | None:
    return started("daphne", words, source)


FAMILY = Family(
    name="daphne",
    executable="daphne",
    extra="daphne",
    deploy_file="daphne.args",
    packages=("daphne", "twisted"),
    features=Features(
        http2="yes, with TLS and Twisted's http2 and tls extras",
        http3="no",
        reload="no graceful reload: restart the process",
        recycle="no",
        process_model="one process (run one per core behind a proxy)",
        checked_with="daphne 4.2.3",
    ),
    own=OwnProtocols(
        tls=("-e", "ssl:{port}:interface={host}:privateKey={key}:certKey={cert}"),
        hint="Daphne has HTTP/2 over TLS only (Twisted's, with the h2 and priority packages)",
    ),
    listen=Listen(
        flags=("-b", "--bind", "-p", "--port", "-u", "--unix-socket", "--fd", "-e", "--endpoint"),
        argv=("--bind", "{host}", "--port", "{port}"),
    ),
    recycle=recycle,
    tuned=tuned,
    tuned_file=appended("#"),
    recognise=recognise,
)

ENTRIES = (
    ServerSpec(
        name="daphne",
        family=FAMILY,
        tuning=ONE_PROCESS,
        interface="asgi",
        websocket=True,
        requires=("daphne",),
        summary="Daphne (Twisted), the Channels project's server; one process",
        build=build,
        multi_worker=False,
    ),
)
