"""Caddy in front of the server under test: its command, environment and state folder."""

from __future__ import annotations

from pathlib import Path

from djbench.launch.servers import Launch, executable_path

PROXIES = ("none", "caddy", "caddy-tls")
# Each proxy's config in deploy/ (the project's own copy first): caddy-tls terminates
# TLS with Caddy's internal CA and speaks HTTP/1.1 or HTTP/2 to clients by ALPN.
CADDYFILES = {"caddy": "Caddyfile", "caddy-tls": "Caddyfile.tls"}
TLS_PROXIES = frozenset({"caddy-tls"})


def tls_root(state_dir: Path) -> Path:
    """Where Caddy's internal CA puts its root certificate (XDG_DATA_HOME below)."""
    return state_dir / "data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"


def caddy_missing() -> bool:
    return executable_path("caddy") is None


def caddy_launch(
    caddyfile: Path, listen_host: str, listen_port: int, upstream: str, state_dir: Path
) -> Launch:
    """``caddy run`` on deploy/Caddyfile, bound to loopback, its state in state_dir.

    Caddy substitutes {$VAR} in the Caddyfile from its environment, so the file a user
    deploys is the very file that is benchmarked.
    """
    caddy = executable_path("caddy") or "caddy"
    argv = [caddy, "run", "--config", str(caddyfile), "--adapter", "caddyfile"]
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
