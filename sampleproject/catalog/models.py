"""The sample project's data: small tables in the shape the seeds' articles benchmark."""

from __future__ import annotations

from django.db import models


class Movie(models.Model):
    """Rows for the paginated ORM list."""

    title = models.CharField(max_length=200)
    year = models.PositiveSmallIntegerField()
    genre = models.CharField(max_length=40)
    rating = models.FloatField()

    def __str__(self) -> str:
        return self.title


class Member(models.Model):
    """Rows for read-one-then-update (the "update last login" pattern)."""

    username = models.CharField(max_length=150, unique=True)
    email = models.EmailField()
    password = models.CharField(max_length=128)  # secret: never serialised
    last_login = models.DateTimeField(null=True)

    def __str__(self) -> str:
        return self.username


class World(models.Model):
    """TechEmpower's World table: the `queries` endpoint reads N random rows."""

    randomnumber = models.IntegerField()

    def __str__(self) -> str:
        return f"world {self.pk}"


class Fortune(models.Model):
    """TechEmpower's Fortune table: rendered through an autoescaping template."""

    message = models.CharField(max_length=2048)

    def __str__(self) -> str:
        return self.message


class Review(models.Model):
    """Written by the POST JSON endpoint as an upsert on (movie, author).

    An upsert keeps the table bounded however long a benchmark posts the same body,
    so the data set does not grow across runs.
    """

    movie = models.ForeignKey(Movie, on_delete=models.CASCADE, related_name="reviews")
    author = models.CharField(max_length=64)
    score = models.PositiveSmallIntegerField()
    comment = models.CharField(max_length=500, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["movie", "author"], name="review_movie_author")
        ]

    def __str__(self) -> str:
        return f"{self.author} on {self.movie_id}"
