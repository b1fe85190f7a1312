"""System checks: what djbench needs from the project it benchmarks.

Each names the fix. They are warnings, never errors: an error would stop every
management command of the project, benchinit (which fixes some of them) included. They
are said by djbench's commands and `manage.py check` only, once each, and benchinit
does not say the two it fixes (W003, W004).

| id | what |
| --- | --- |
| djbench.W001 / W002 | the query-count middleware is missing / not first |
| djbench.W003 | the scenario file is missing |
| djbench.W004 | the scenario file is invalid |
| djbench.W005 | a server's deploy file is missing (neither the project's nor djbench's) |
| djbench.W006 | the WSGI application's module cannot be found |
| djbench.W007 | the ASGI application's module cannot be found |
| djbench.W008 | ALLOWED_HOSTS refuses 127.0.0.1, where djbench sends its requests |
| djbench.W009 | DEBUG is on: Django keeps every SQL query in memory and takes debug paths |
| djbench.W010 | persistent connections (CONN_MAX_AGE > 0 or None): under ASGI, one per request |
| djbench.W011 | a server's dependencies moved a package the project pins |
| djbench.W012 | ... and moved a security library back to an older version |
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

from django.conf import settings
from django.core import checks
from django.http.request import validate_host

MIDDLEWARE_PATH = "djbench.middleware.QueryCountMiddleware"


def check_query_count_middleware(
    app_configs: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    if MIDDLEWARE_PATH in settings.MIDDLEWARE:
        if settings.MIDDLEWARE[0] != MIDDLEWARE_PATH:
            return [
                checks.Warning(
                    f"{MIDDLEWARE_PATH} is not first in MIDDLEWARE.",
                    hint="Queries made by middleware above it are not counted by the verify gate.",
                    id="djbench.W002",
                )
            ]
        return []
    return [
        checks.Warning(
            f"{MIDDLEWARE_PATH} is not in MIDDLEWARE.",
            hint="Add it first in MIDDLEWARE so that the verify gate can check query counts; "
            "without it, a scenario that pins a count (queries = N) fails the gate and a "
            "range (queries = [low, high]) is not checked (docs/reference/scenarios.md).",
            id="djbench.W001",
        )
    ]


def _module_missing(app: str) -> bool:
    module = app.partition(":")[0]
    try:
        return not module or importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def check_project(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from djbench.plan import scenarios
    from djbench.plan.project import current
    from djbench.servers import SERVERS

    found: list[checks.CheckMessage] = []
    project = current()
    if not project.scenarios.exists():
        found.append(
            checks.Warning(
                f"djbench's scenario file {project.scenarios} does not exist.",
                hint="Create one from your URLconf with: python manage.py benchinit "
                '(or point DJBENCH["SCENARIOS"] at yours).',
                id="djbench.W003",
            )
        )
    else:
        try:
            scenarios.load(project.scenarios)
        except scenarios.ScenarioError as exc:
            found.append(
                checks.Warning(
                    f"djbench's scenario file is invalid: {exc}",
                    hint="Fix the key named; the format is described in djbench's README.",
                    id="djbench.W004",
                )
            )
    for name in sorted({s.deploy_file for s in SERVERS.values()} | {"Caddyfile"}):
        if not project.config_file(name).exists():
            found.append(
                checks.Warning(
                    f"No deploy file {name}: neither {project.deploy_dir / name} nor "
                    "djbench's default exists.",
                    hint="python manage.py benchinit --deploy copies djbench's defaults.",
                    id="djbench.W005",
                )
            )
    if _module_missing(project.wsgi_app):
        found.append(
            checks.Warning(
                f"The WSGI application {project.wsgi_app!r} cannot be found.",
                hint='Set WSGI_APPLICATION, or DJBENCH["WSGI_APP"] = "module:attribute".',
                id="djbench.W006",
            )
        )
    if _module_missing(project.asgi_app):
        found.append(
            checks.Warning(
                f"The ASGI application {project.asgi_app!r} cannot be found.",
                hint='Set DJBENCH["ASGI_APP"] = "module:attribute", or remove ASGI_APPLICATION '
                "to let djbench serve Django's own get_asgi_application().",
                id="djbench.W007",
            )
        )
    allowed = settings.ALLOWED_HOSTS or (
        [".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else []
    )
    if not validate_host("127.0.0.1", allowed):
        found.append(
            checks.Warning(
                "ALLOWED_HOSTS refuses 127.0.0.1: every request djbench sends would get 400.",
                hint='Add "127.0.0.1" to ALLOWED_HOSTS for benchmarking.',
                id="djbench.W008",
            )
        )
    if settings.DEBUG:
        found.append(
            checks.Warning(
                "DEBUG is True: Django keeps every SQL query in memory and runs debug "
                "code paths, so djbench's memory and speed figures would not be your "
                "production's.",
                hint="Benchmark with DEBUG = False (as in production).",
                id="djbench.W009",
            )
        )
    return found + check_persistent_connections()


def check_persistent_connections() -> list[checks.CheckMessage]:
    """CONN_MAX_AGE > 0 (or None) without a pool: a run's ASGI servers would each keep a
    connection per request (djbench.plan.dbsettings), said with the project's own line."""
    from djbench.plan import dbsettings

    persistent, value = dbsettings.conn_max_age()
    if not persistent:
        return []
    return [
        checks.Warning(
            f"CONN_MAX_AGE is {value!r}: persistent database connections. Under the ASGI "
            "servers djbench runs (and any), Django runs each request's sync code in a "
            "thread of its own that keeps its own connection, so a server holds one per "
            "request until the database refuses more; thread pools hold one per thread.",
            hint=dbsettings.remedy()[0].upper() + dbsettings.remedy()[1:] + ".",
            id="djbench.W010",
        )
    ]


def check_install_moves(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Packages the project pins that installing a server's extra moved (W011), a
    security library moved back (W012): djbench.servers.installmoves."""
    from djbench.plan.project import current
    from djbench.servers import installmoves

    found: list[checks.CheckMessage] = []
    for m in installmoves.moved(current().directory):
        said = (
            f"{m.package} is {m.installed} here, and {m.pinned_in} pins {m.pinned}: "
            f"{m.required_by} moved it, installed for {m.server_package} "
            f"(djbench[{m.extra}])."
        )
        hint = (
            f"Leave out djbench[{m.extra}] (install the other server extras one by one), "
            f"or measure {m.server_package} in an environment of its own (runbench --matrix)."
        )
        found.append(
            checks.Warning(
                ("A security library moved back: " if m.security else "") + said,
                hint=hint,
                id="djbench.W012" if m.security else "djbench.W011",
            )
        )
    return found


# The management commands djbench's checks speak in: its own and `check`. In any other
# command of the project (migrate, runserver, shell...) they would repeat the same
# warnings at the top of every command, about a tool that command does not run.
SPEAKS_IN = frozenset(
    {"check", "runbench", "benchinit", "benchcompare", "benchreport", "benchguide"}
    | {"benchcalibrate"}
)


# How a management command's argv starts: manage.py, django-admin, `python -m django`.
COMMAND_LINES = ("manage.py", "django-admin", "django/__main__.py")


def _in_another_command(argv: list[str]) -> bool:
    """True when argv is `manage.py X` or `django-admin X` for a command X not in
    SPEAKS_IN (tests and call_command run the checks as asked)."""
    if len(argv) < 2 or not argv[0].endswith(COMMAND_LINES):
        return False
    return not argv[1].startswith("-") and argv[1] not in SPEAKS_IN


def _quiet_elsewhere(check: Any) -> Any:
    def speaks(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
        return [] if _in_another_command(sys.argv) else check(app_configs, **kwargs)

    speaks.__name__ = check.__name__
    return speaks


def register() -> None:
    for check in (check_query_count_middleware, check_project, check_install_moves):
        checks.register(_quiet_elsewhere(check), "djbench")
