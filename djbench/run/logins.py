"""Real pages need real requests: a logged-in session and a CSRF token for a scenario.

runbench makes them in the project's own database and session store before the servers
start (as `django.contrib.auth.login` would), and the drivers send them as cookies; they
are not part of the scenario's definition (nor of its fingerprint).
"""

from __future__ import annotations

import dataclasses
from importlib import import_module

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.db import connections
from django.middleware.csrf import _get_new_csrf_string  # Django's own token generator

from djbench.plan.options import OptionError
from djbench.plan.scenarios import Scenario


def _session_cookie(username: str, scenario: str) -> str:
    User = get_user_model()
    try:
        user = User._default_manager.get_by_natural_key(username)
    except User.DoesNotExist:
        raise OptionError(
            f"scenario {scenario!r}: user {username!r} does not exist in the project's "
            "database; create it (manage.py createsuperuser) or change `user`"
        ) from None
    engine = import_module(settings.SESSION_ENGINE)
    session = engine.SessionStore()
    session[SESSION_KEY] = user._meta.pk.value_to_string(user)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


def prepare(scenarios: list[Scenario]) -> list[Scenario]:
    """Scenarios with the session and CSRF headers their `user` and `csrf` ask for (a
    mix's pages each with their own)."""
    sessions: dict[str, str] = {}
    ready = [_ready(scenario, sessions) for scenario in scenarios]
    if sessions:
        connections.close_all()  # the servers open their own; keep no SQLite lock here
    return ready


def _ready(scenario: Scenario, sessions: dict[str, str]) -> Scenario:
    if scenario.mix:
        parts = tuple(
            dataclasses.replace(part, scenario=_ready(part.scenario, sessions))
            for part in scenario.mix
        )
        heaviest = max(parts, key=lambda part: part.weight).scenario
        return dataclasses.replace(scenario, mix=parts, request=heaviest.request)
    cookies: list[str] = []
    headers: list[tuple[str, str]] = []
    if scenario.user:
        if scenario.user not in sessions:
            sessions[scenario.user] = _session_cookie(scenario.user, scenario.name)
        cookies.append(sessions[scenario.user])
    if scenario.csrf:
        token = _get_new_csrf_string()
        cookies.append(f"{settings.CSRF_COOKIE_NAME}={token}")
        headers.append(("X-CSRFToken", token))
    if not cookies:
        return scenario
    headers.append(("Cookie", "; ".join(cookies)))
    return dataclasses.replace(
        scenario, request=dataclasses.replace(scenario.request, session_headers=tuple(headers))
    )
