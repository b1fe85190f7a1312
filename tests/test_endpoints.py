"""Every endpoint, sync and async, through Django's test clients, with query counts.

The same file runs on SQLite and on PostgreSQL (the Makefile's second pass sets
DATABASE_URL): the counts are part of the contract that the verify gate checks
against live servers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test import AsyncClient, Client
from django.test.utils import CaptureQueriesContext

from djbench import querycount
from sampleproject.catalog.models import Member, Review
from sampleproject.catalog.schemas import PAGE_SIZE
from sampleproject.catalog.seeding import MOVIE_ROWS

pytestmark = pytest.mark.django_db

VARIANTS = ["sync", "async"]
COUNT_HEADER = {"headers": {"X-Djbench-Count-Queries": "1"}}


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes
    queries: int  # counted by Django's CaptureQueriesContext
    counted: int | None  # counted by djbench's header mechanism

    def json(self) -> Any:
        return json.loads(self.body)


def call(variant: str, method: str, path: str, data: Any = None) -> Answer:
    """One request to /api/{variant}{path}; async variants go through the ASGI handler."""
    url = f"/api/{variant}{path}"
    kwargs: dict[str, Any] = dict(COUNT_HEADER)
    if data is not None:
        kwargs.update(
            data=json.dumps(data) if not isinstance(data, str) else data,
            content_type="application/json",
        )
    with CaptureQueriesContext(connection) as captured:
        if variant == "sync":
            response = getattr(Client(), method)(url, **kwargs)
        else:
            # From a sync test, async_to_sync runs the ASGI handler on its own loop
            # while thread-sensitive ORM calls come back to this thread's connection.
            response = async_to_sync(getattr(AsyncClient(), method))(url, **kwargs)
    header = response.headers.get(querycount.RESPONSE_HEADER)
    return Answer(
        status=response.status_code,
        content_type=response.headers.get("Content-Type", ""),
        body=response.content,
        queries=len(captured),
        counted=int(header) if header is not None else None,
    )


def assert_queries(answer: Answer, expected: int) -> None:
    assert answer.queries == expected
    assert answer.counted == expected


@pytest.mark.parametrize("variant", VARIANTS)
def test_health(variant: str) -> None:
    answer = call(variant, "get", "/health")
    assert answer.status == 200
    assert answer.content_type == "application/json; charset=utf-8"
    assert answer.json() == {"status": "ok"}
    assert_queries(answer, 0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_deep_health(variant: str) -> None:
    answer = call(variant, "get", "/health/deep")
    assert answer.status == 200
    assert answer.json() == {"status": "ok", "checks": {"database": "ok", "cache": "ok"}}
    assert_queries(answer, 1)


@pytest.mark.parametrize("variant", VARIANTS)
def test_deep_health_leaks_nothing_unless_asked(variant: str, settings: Any) -> None:
    assert "host" not in call(variant, "get", "/health/deep").json()
    settings.HEALTH_VERBOSE = True
    body = call(variant, "get", "/health/deep").json()
    assert set(body) == {"status", "checks", "host", "versions"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_deep_health_reports_a_broken_cache_as_503(variant: str, settings: Any) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        }
    }
    answer = call(variant, "get", "/health/deep")
    assert answer.status == 503
    body = answer.json()
    assert body["status"] == "error"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["cache"].startswith("error: ")


@pytest.mark.parametrize("variant", VARIANTS)
def test_deep_health_with_redis_cache(variant: str, settings: Any, redis_url: str) -> None:
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}
    }
    answer = call(variant, "get", "/health/deep")
    assert answer.status == 200, answer.body
    assert answer.json()["checks"] == {"database": "ok", "cache": "ok"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_movies_pages_are_stable(variant: str) -> None:
    first = call(variant, "get", "/movies")
    assert first.status == 200
    body = first.json()
    assert body["count"] == MOVIE_ROWS
    assert body["page"] == 1 and body["page_size"] == PAGE_SIZE
    assert [m["id"] for m in body["results"]] == list(range(1, PAGE_SIZE + 1))
    assert set(body["results"][0]) == {"id", "title", "year", "genre", "rating"}
    assert_queries(first, 2)
    third = call(variant, "get", "/movies?page=3").json()
    assert third["results"][0]["id"] == 2 * PAGE_SIZE + 1
    beyond = call(variant, "get", f"/movies?page={MOVIE_ROWS}").json()
    assert beyond["results"] == []


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("page", ["0", "-1", "abc"])
def test_movies_bad_page(variant: str, page: str) -> None:
    answer = call(variant, "get", f"/movies?page={page}")
    assert answer.status == 422
    assert answer.json()["detail"][0]["loc"] == ["query", "page"]


def test_movies_sync_and_async_answer_alike() -> None:
    assert call("sync", "get", "/movies?page=7").body == call("async", "get", "/movies?page=7").body


@pytest.mark.parametrize("variant", VARIANTS)
def test_touch_updates_last_login_and_hides_secrets(variant: str) -> None:
    before = Member.objects.get(pk=42).last_login
    answer = call(variant, "post", "/members/42/touch")
    assert answer.status == 200
    body = answer.json()
    assert set(body) == {"id", "username", "email", "last_login"}
    assert body["id"] == 42 and body["username"] == "member00042"
    after = Member.objects.get(pk=42).last_login
    assert after is not None and before is not None and after > before
    assert_queries(answer, 2)


@pytest.mark.parametrize("variant", VARIANTS)
def test_touch_unknown_member_is_404(variant: str) -> None:
    answer = call(variant, "post", "/members/999999/touch")
    assert answer.status == 404
    assert answer.json() == {"detail": "member 999999 not found"}
    assert_queries(answer, 1)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    ("raw", "expected"),
    [("", 1), ("1", 1), ("7", 7), ("0", 1), ("foo", 1), ("501", 500), ("-3", 1), (None, 1)],
)
def test_queries_are_clamped(variant: str, raw: str | None, expected: int) -> None:
    path = "/queries" if raw is None else f"/queries?queries={raw}"
    answer = call(variant, "get", path)
    assert answer.status == 200
    rows = answer.json()
    assert len(rows) == expected
    assert all(set(row) == {"id", "randomnumber"} for row in rows)
    assert_queries(answer, expected)


@pytest.mark.parametrize("variant", VARIANTS)
def test_fortunes_are_escaped_sorted_and_extended(variant: str) -> None:
    answer = call(variant, "get", "/fortunes")
    assert answer.status == 200
    assert answer.content_type == "text/html; charset=utf-8"
    html = answer.body.decode()
    assert "&lt;script&gt;alert(&quot;This should not be displayed" in html
    assert "<script>" not in html
    assert "Additional fortune added at request time." in html
    assert html.count("<tr>") == 1 + 13  # header row + 12 seeded + 1 added
    assert html.index("A bad random") < html.index("Additional fortune") < html.index("Any program")
    assert_queries(answer, 1)


def test_fortunes_sync_and_async_answer_alike() -> None:
    assert call("sync", "get", "/fortunes").body == call("async", "get", "/fortunes").body


REVIEW = {"movie_id": 3, "author": "alice", "score": 8, "comment": "fine"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_review_upserts(variant: str) -> None:
    first = call(variant, "post", "/reviews", REVIEW)
    assert first.status == 200
    assert first.json() == REVIEW
    assert_queries(first, 2)
    second = call(variant, "post", "/reviews", {**REVIEW, "score": 9})
    assert second.status == 200
    assert_queries(second, 2)
    rows = list(Review.objects.values_list("movie_id", "author", "score"))
    assert rows == [(3, "alice", 9)]  # the data set does not grow


@pytest.mark.parametrize("variant", VARIANTS)
def test_review_unknown_movie_is_404_and_writes_nothing(variant: str) -> None:
    answer = call(variant, "post", "/reviews", {**REVIEW, "movie_id": 999999})
    assert answer.status == 404
    assert answer.json() == {"detail": "movie 999999 not found"}
    assert_queries(answer, 1)
    assert not Review.objects.exists()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**REVIEW, "score": 11}, "score"),
        ({**REVIEW, "score": 0}, "score"),
        ({**REVIEW, "author": ""}, "author"),
        ({**REVIEW, "author": "<b>x</b>"}, "author"),
        ({**REVIEW, "comment": "x" * 501}, "comment"),
        ({k: v for k, v in REVIEW.items() if k != "movie_id"}, "movie_id"),
        ({**REVIEW, "movie_id": "three"}, "movie_id"),
    ],
)
def test_review_invalid_body_is_422_and_writes_nothing(
    variant: str, body: dict[str, Any], field: str
) -> None:
    answer = call(variant, "post", "/reviews", body)
    assert answer.status == 422
    detail = answer.json()["detail"]
    assert detail[0]["loc"][-1] == field
    assert detail[0]["msg"]
    assert_queries(answer, 0)
    assert not Review.objects.exists()


@pytest.mark.parametrize("variant", VARIANTS)
def test_review_malformed_json_is_rejected(variant: str) -> None:
    answer = call(variant, "post", "/reviews", "{not json")
    assert answer.status in (400, 422)
    assert_queries(answer, 0)
    assert not Review.objects.exists()


@pytest.mark.parametrize("variant", VARIANTS)
def test_sleep(variant: str) -> None:
    answer = call(variant, "get", "/sleep?ms=5")
    assert answer.status == 200
    assert answer.json() == {"slept_ms": 5}
    assert_queries(answer, 0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("ms", ["-1", "1001", "abc"])
def test_sleep_out_of_range(variant: str, ms: str) -> None:
    answer = call(variant, "get", f"/sleep?ms={ms}")
    assert answer.status == 422
    assert answer.json()["detail"][0]["loc"] == ["query", "ms"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_ballast_keeps_memory_once_per_size(variant: str) -> None:
    from sampleproject.catalog import api

    api.BALLAST.clear()
    first = call(variant, "get", "/ballast?mb=2")
    again = call(variant, "get", "/ballast?mb=2")
    assert first.status == again.status == 200
    assert first.json() == again.json() == {"held_mb": 2}  # allocated once, kept
    assert_queries(first, 0)
    assert call(variant, "get", "/ballast?mb=999").status == 422
    api.BALLAST.clear()


def test_unknown_path_is_404() -> None:
    assert call("sync", "get", "/nope").status == 404


def test_query_count_header_only_when_asked() -> None:
    response = Client().get("/api/sync/movies")
    assert querycount.RESPONSE_HEADER not in response.headers
