"""Request and response shapes of the sample API (django-ninja / pydantic)."""

from __future__ import annotations

from datetime import datetime

from ninja import Schema
from pydantic import Field

PAGE_SIZE = 20
MAX_QUERIES = 500
MAX_SLEEP_MS = 1000
MAX_BALLAST_MB = 256


class HealthOut(Schema):
    status: str


class MovieOut(Schema):
    id: int
    title: str
    year: int
    genre: str
    rating: float


class MoviePage(Schema):
    count: int
    page: int
    page_size: int
    results: list[MovieOut]


class MemberOut(Schema):
    """A member without its secret fields (no password)."""

    id: int
    username: str
    email: str
    last_login: datetime | None


class WorldOut(Schema):
    id: int
    randomnumber: int


class ReviewIn(Schema):
    movie_id: int = Field(ge=1)
    author: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    score: int = Field(ge=1, le=10)
    comment: str = Field(default="", max_length=500)


class ReviewOut(Schema):
    movie_id: int
    author: str
    score: int
    comment: str


class SleepOut(Schema):
    slept_ms: int


class BallastOut(Schema):
    held_mb: int


class ErrorOut(Schema):
    detail: str


def clamp_queries(raw: str | None) -> int:
    """TechEmpower's rule: missing or non-numeric means 1; otherwise clamp to 1..500."""
    try:
        value = int(raw) if raw is not None else 1
    except ValueError:
        return 1
    return max(1, min(MAX_QUERIES, value))
