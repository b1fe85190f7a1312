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
        # --matrix only:
        "REQUIREMENTS": "requirements.txt",      # a file, or a list of requirement lines
        "MATRIX_CELL_ENV": {"VAR": "{cell_dir}/x"},  # variables each cell's runbench gets
    }
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

# Server configs and a starter scenario file ship with djbench (package data); a
# project's own DEPLOY_DIR overrides them file by file.
PACKAGED_DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
FALLBACK_ASGI = "djbench.asgi:application"


@dataclass(frozen=True)
class Project:
    directory: Path
    settings_module: str
    wsgi_app: str
    asgi_app: str
    deploy_dir: Path
    scenarios: Path
    setup_commands: tuple[tuple[str, ...], ...]
    asgi_source: str = "ASGI_APPLICATION"
    # --matrix: the project's own requirements (lines: "-r file" or requirements) and the
    # variables each cell's runbench is started with ({cell_dir} filled in).
    requirements: tuple[str, ...] = ()
    matrix_cell_env: tuple[tuple[str, str], ...] = ()
    # What the readiness probe sends besides the path: the header the settings trust to
    # say a request came over HTTPS, when they redirect plain HTTP (SECURE_SSL_REDIRECT).
    ready_headers: tuple[tuple[str, str], ...] = ()

    def config_file(self, name: str) -> Path:
        """The project's own deploy/<name> when it has one, else djbench's default."""
        own = self.deploy_dir / name
        return own if own.exists() else PACKAGED_DEPLOY / name

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


def _module_exists(dotted: str) -> bool:
    try:
        return importlib.util.find_spec(dotted) is not None
    except (ImportError, ValueError):
        return False


def asgi_app(conf: dict[str, Any]) -> tuple[str, str]:
    """(module:attribute, where it came from) of the ASGI application to serve.

    DJBENCH["ASGI_APP"], else ASGI_APPLICATION (Channels' setting), else the asgi.py
    beside the WSGI module (startproject makes one), else djbench.asgi: Django's own
    get_asgi_application() for a project that has no ASGI entry point at all.
    """
    if conf.get("ASGI_APP"):
        return str(conf["ASGI_APP"]), 'DJBENCH["ASGI_APP"]'
    configured = _app_path(getattr(settings, "ASGI_APPLICATION", ""))
    if configured:
        return configured, "ASGI_APPLICATION"
    wsgi_module = str(getattr(settings, "WSGI_APPLICATION", "") or "").rpartition(".")[0]
    package = wsgi_module.rpartition(".")[0]
    if package and _module_exists(f"{package}.asgi"):
        return f"{package}.asgi:application", f"{package}/asgi.py (beside WSGI_APPLICATION)"
    return FALLBACK_ASGI, "djbench.asgi: Django's get_asgi_application() (no ASGI entry point)"


def current() -> Project:
    conf: dict[str, Any] = dict(getattr(settings, "DJBENCH", {}) or {})
    directory = Path(conf.get("PROJECT_DIR") or Path.cwd()).resolve()
    asgi, asgi_source = asgi_app(conf)
    return Project(
        directory=directory,
        settings_module=os.environ.get("DJANGO_SETTINGS_MODULE", "")
        or str(getattr(settings, "SETTINGS_MODULE", "")),
        wsgi_app=str(conf.get("WSGI_APP") or _app_path(getattr(settings, "WSGI_APPLICATION", ""))),
        asgi_app=asgi,
        asgi_source=asgi_source,
        deploy_dir=Path(conf.get("DEPLOY_DIR") or directory / "deploy"),
        scenarios=Path(conf.get("SCENARIOS") or directory / "loadtests" / "default.toml"),
        setup_commands=tuple(tuple(c) for c in conf.get("SETUP_COMMANDS", [])),
        requirements=requirements(conf, directory),
        matrix_cell_env=tuple((str(k), str(v)) for k, v in conf.get("MATRIX_CELL_ENV", {}).items()),
        ready_headers=ready_headers(),
    )


def ready_headers() -> tuple[tuple[str, str], ...]:
    from djbench.plan.inprocess import https_headers, redirects_to_https

    return tuple(https_headers().items()) if redirects_to_https() else ()


def requirements(conf: dict[str, Any], directory: Path) -> tuple[str, ...]:
    """DJBENCH["REQUIREMENTS"] (a file or a list of lines), else requirements.txt beside
    manage.py when there is one, else nothing (Django, djbench and the servers only)."""
    given = conf.get("REQUIREMENTS")
    if isinstance(given, list | tuple):
        return tuple(str(line) for line in given)
    path = Path(given) if given else directory / "requirements.txt"
    path = path if path.is_absolute() else directory / path
    return (f"-r {path}",) if path.exists() else ()
