from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from tests import services


def pytest_sessionstart(session: pytest.Session) -> None:
    # The PostgreSQL pass (DATABASE_URL=postgres://...) needs the server before
    # pytest-django tries to create the test database.
    if connection.vendor == "postgresql" and not services.reachable("127.0.0.1", 5432):
        import os

        if os.environ.get("CI", "").lower() == "true":
            pytest.exit("PostgreSQL is not reachable on 127.0.0.1:5432 (CI=true)", returncode=1)
        pytest.exit("PostgreSQL is not reachable on 127.0.0.1:5432: pass skipped", returncode=0)


DATABASE_FIXTURES = {"live_database", "db", "transactional_db", "django_db_setup"}
DATABASE_MARKERS = {"servers", "postgres", "django_db"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The PostgreSQL pass runs only what can meet a database: tests that start servers
    or ask for one (fixture or marker). The rest (statistics, parsers, plans: pure
    Python) ran in the SQLite pass and would repeat it word for word; pytest's summary
    counts them as deselected."""
    if connection.vendor != "postgresql":
        return
    keep, drop = [], []
    for item in items:
        marked = {m.name for m in item.iter_markers()} & DATABASE_MARKERS
        uses = set(getattr(item, "fixturenames", ())) & DATABASE_FIXTURES
        (keep if marked or uses else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    """The test database, migrated and seeded once per session."""
    from sampleproject.catalog.seeding import seed

    with django_db_blocker.unblock():
        seed()
    yield


@pytest.fixture
def redis_url() -> str:
    services.require_redis()
    return services.REDIS_URL


@pytest.fixture(scope="session")
def live_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A migrated, seeded database for real server processes; DATABASE_URL points at it."""
    from tests import live

    if connection.vendor == "postgresql":
        services.require_postgres()
    url = live.live_database_url(tmp_path_factory.mktemp("live"))
    live.prepare(url)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DATABASE_URL", url)
        yield url


@pytest.fixture
def one_pass() -> None:
    """For live tests that never touch the database: run in the SQLite pass of `make
    test` only (the PostgreSQL pass would repeat them for nothing)."""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("independent of the database: run in the SQLite pass only")


@pytest.fixture
def postgres_url() -> str:
    """The PostgreSQL server's maintenance database (tests that make databases of
    their own); a missing server skips, or fails under CI=true."""
    services.require_postgres()
    return services.POSTGRES_URL
