"""Deterministic seed data: the same rows on SQLite and PostgreSQL, every time."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime

from django.core.management.color import no_style
from django.db import connection, transaction

from sampleproject.catalog.models import Fortune, Member, Movie, Review, World

MOVIE_ROWS = 5000
MEMBER_ROWS = 5000
WORLD_ROWS = 10000
SEED = 20261129
BATCH = 1000

GENRES = ["drama", "comedy", "thriller", "documentary", "animation", "horror", "sci-fi"]
WORDS = [
    "night",
    "river",
    "glass",
    "winter",
    "signal",
    "harbor",
    "echo",
    "garden",
    "iron",
    "paper",
    "silent",
    "golden",
    "last",
    "north",
    "hidden",
    "electric",
]

# TechEmpower's fortunes, including the row that must come out escaped.
FORTUNES = [
    "fortune: No such file or directory",
    "A computer scientist is someone who fixes things that aren't broken.",
    "After enough decimal places, nobody gives a damn.",
    "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1",
    "A computer program does what you tell it to do, not what you want it to do.",
    "Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen",
    "Any program that runs right is obsolete.",
    "A list is only as strong as its weakest link. — Donald Knuth",
    "Feature: A bug with seniority.",
    "Computers make very fast, very accurate mistakes.",
    '<script>alert("This should not be displayed in a browser alert box.");</script>',
    "フレームワークのベンチマーク",
]


@dataclass(frozen=True)
class SeedReport:
    created: bool
    counts: dict[str, int]


def _movies(rng: random.Random) -> list[Movie]:
    return [
        Movie(
            id=i,
            title=f"The {rng.choice(WORDS).title()} {rng.choice(WORDS).title()} {i}",
            year=rng.randint(1950, 2025),
            genre=rng.choice(GENRES),
            rating=round(rng.uniform(1, 10), 1),
        )
        for i in range(1, MOVIE_ROWS + 1)
    ]


def _members() -> list[Member]:
    # An unusable password hash: the field exists only to prove it is never serialised.
    return [
        Member(
            id=i,
            username=f"member{i:05d}",
            email=f"member{i:05d}@example.invalid",
            password="!djbench-unusable",
            last_login=datetime(2026, 1, 1, tzinfo=UTC),
        )
        for i in range(1, MEMBER_ROWS + 1)
    ]


def _worlds(rng: random.Random) -> list[World]:
    return [World(id=i, randomnumber=rng.randint(1, 10000)) for i in range(1, WORLD_ROWS + 1)]


def _fortunes() -> list[Fortune]:
    return [Fortune(id=i, message=m) for i, m in enumerate(FORTUNES, start=1)]


EXPECTED = {
    "movie": MOVIE_ROWS,
    "member": MEMBER_ROWS,
    "world": WORLD_ROWS,
    "fortune": len(FORTUNES),
}


def current_counts() -> dict[str, int]:
    return {
        "movie": Movie.objects.count(),
        "member": Member.objects.count(),
        "world": World.objects.count(),
        "fortune": Fortune.objects.count(),
    }


def seed(force: bool = False) -> SeedReport:
    """Make the data set exactly the expected one; cheap when it already is.

    Reviews (written by the POST endpoint) are always cleared, so every run starts
    from the same state.
    """
    with transaction.atomic():
        Review.objects.all().delete()
        counts = current_counts()
        if counts == EXPECTED and not force:
            return SeedReport(created=False, counts=counts)
        for model in (Movie, Member, World, Fortune):
            model.objects.all().delete()
        rng = random.Random(SEED)
        Movie.objects.bulk_create(_movies(rng), batch_size=BATCH)
        Member.objects.bulk_create(_members(), batch_size=BATCH)
        World.objects.bulk_create(_worlds(rng), batch_size=BATCH)
        Fortune.objects.bulk_create(_fortunes(), batch_size=BATCH)
        # Rows were inserted with explicit ids: move sequences past them (PostgreSQL).
        statements = connection.ops.sequence_reset_sql(no_style(), [Movie, Member, World, Fortune])
        with connection.cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)
    return SeedReport(created=True, counts=current_counts())
