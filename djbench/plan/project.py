"""The Django project under test, as djbench needs to know it.

Everything comes from the project's settings, with defaults that fit the usual layout;
an optional ``DJBENCH`` dict in settings overrides any of it:

    DJBENCH = {
        "PROJECT_DIR": BASE_DIR,                 # where servers start (cwd, PYTHONPATH)
        "WSGI_APP": "mysite.wsgi:application",   # default: from WSGI_APPLICATION
        "ASGI_APP": "mysite.asgi:application",   # default: from ASGI_APPLICATION
        "DEPLOY_DIR": BASE_DIR / "deploy",       # the server configs to start from
        "SCENARIOS": BASE_DIR / "loadtests" / "default.toml",
        "SETUP_COMMANDS": [["migrate", "--noinput"]],  # run before servers start
    }
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings


@dataclass(frozen=True)
class Project:
    directory: Path
    settings_module: str
    wsgi_app: str
    asgi_app: str
    deploy_dir: Path
    scenarios: Path
    setup_commands: tuple[tuple[str, ...], ...]

    def server_env(self, extra: dict[str, str]) -> dict[str, str]:
        """The environment a server starts with: ours, plus what the run controls."""
        env = dict(os.environ)
        env["DJANGO_SETTINGS_MODULE"] = self.settings_module
        path = env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = f"{self.directory}{os.pathsep}{path}" if path else str(self.directory)
        env["PYTHONUNBUFFERED"] = "1"
        env.update(extra)
        return env


def _app_path(dotted: str | None) -> str:
    """'mysite.wsgi.application' -> 'mysite.wsgi:application'."""
    if not dotted:
        return ""
    module, _, attribute = dotted.rpartition(".")
    return f"{module}:{attribute}"


def current() -> Project:
    conf: dict[str, Any] = dict(getattr(settings, "DJBENCH", {}) or {})
    directory = Path(conf.get("PROJECT_DIR") or Path.cwd()).resolve()
    return Project(
        directory=directory,
        settings_module=os.environ.get("DJANGO_SETTINGS_MODULE", "")
        or str(getattr(settings, "SETTINGS_MODULE", "")),
        wsgi_app=str(conf.get("WSGI_APP") or _app_path(getattr(settings, "WSGI_APPLICATION", ""))),
        asgi_app=str(conf.get("ASGI_APP") or _app_path(getattr(settings, "ASGI_APPLICATION", ""))),
        deploy_dir=Path(conf.get("DEPLOY_DIR") or directory / "deploy"),
        scenarios=Path(conf.get("SCENARIOS") or directory / "loadtests" / "default.toml"),
        setup_commands=tuple(tuple(c) for c in conf.get("SETUP_COMMANDS", [])),
    )
