"""ASGI hop causes are named by what forces them (issue 22 item 7): a sync-only
middleware placed after djbench's own is the cause of both hops it brings, never
djbench's middleware nor Django's internal wrappers; the advice names it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from djbench.measure import hops
from djbench.plan import scenarios
from djbench.reports.hop_words import hop_advice

SCENARIOS = Path(__file__).resolve().parent.parent / "loadtests" / "default.toml"
MINE = "tests.test_hops.SyncOnlyMiddleware"
WHITENOISE = "whitenoise.middleware.WhiteNoiseMiddleware"


class SyncOnlyMiddleware:
    """What a third-party middleware often is: no async_capable, so sync only."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        return self.get_response(request)


def health_async() -> scenarios.Scenario:
    return next(s for s in scenarios.load(SCENARIOS).scenarios if s.name == "health-async")


@pytest.mark.parametrize("where", [0, 1, -1])
def test_a_sync_only_middleware_is_named_as_the_cause(settings: Any, where: int) -> None:
    chain = list(settings.MIDDLEWARE)  # djbench's QueryCountMiddleware first
    chain.insert(len(chain) if where == -1 else where, MINE)
    settings.MIDDLEWARE = chain
    found = hops.count(health_async())
    assert found.counted and found.status == 200
    text = " ".join(found.causes)
    assert "convert_exception_to_response" not in text  # Django's wrapper, looked through
    assert "QueryCountMiddleware" not in text  # djbench's own never takes the blame
    mine = [c for c in found.causes if "SyncOnlyMiddleware: sync only" in c]
    assert mine, found.causes
    if where != -1:  # a middleware below it is called back: the second hop is its too
        assert any(c.startswith("async_to_sync") for c in mine), found.causes
    assert "tests.test_hops.SyncOnlyMiddleware is sync only" in hop_advice(found.causes)


def test_the_sample_chain_blames_no_middleware_of_its_own(settings: Any) -> None:
    found = hops.count(health_async())
    assert not [c for c in found.causes if ": sync only" in c], found.causes


def test_whitenoise_after_security_is_named_as_cookiecutter_django_places_it(
    settings: Any,
) -> None:
    """cookiecutter-django's chain: WhiteNoise right after SecurityMiddleware."""
    pytest.importorskip("whitenoise", reason='pip install "djbench[test]" installs WhiteNoise')
    chain = list(settings.MIDDLEWARE)
    chain.insert(chain.index("django.middleware.security.SecurityMiddleware") + 1, WHITENOISE)
    settings.MIDDLEWARE = chain
    found = hops.count(health_async())
    named = [c for c in found.causes if "WhiteNoiseMiddleware: sync only" in c]
    assert len(named) == 2, found.causes  # into the thread, and back to the chain
    assert not [c for c in found.causes if "djbench" in c], found.causes
