"""The sample API: every endpoint twice, under /api/sync/ and /api/async/.

The async variants use Django's async ORM (``aget``, ``acount``, async iteration),
not ``sync_to_async`` around the view. SQL queries per request (checked by the verify
gate against the live server, and by the tests):

==================  ===================================  =======
endpoint            path (after /api/{sync,async})       queries
==================  ===================================  =======
health              GET  /health                         0
deep health         GET  /health/deep                    1
ORM list            GET  /movies?page=N                  2
read + update       POST /members/{id}/touch             2 (1 for an unknown id: 404)
queries             GET  /queries?queries=N              N (clamped to 1..500)
template            GET  /fortunes                       1
POST JSON           POST /reviews                        2 (1 for an unknown movie: 404;
                                                            0 for an invalid body: 422)
slow I/O            GET  /sleep?ms=N                     0
memory left behind  GET  /ballast?mb=N                   0 (N MiB kept by the process)
==================  ===================================  =======
"""

from __future__ import annotations

import asyncio
import random
import time

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils import timezone
from ninja import NinjaAPI, Query, Router, Status

from sampleproject.catalog import health
from sampleproject.catalog.models import Fortune, Member, Movie, Review, World
from sampleproject.catalog.schemas import (
    MAX_BALLAST_MB,
    MAX_SLEEP_MS,
    PAGE_SIZE,
    BallastOut,
    ErrorOut,
    HealthOut,
    MemberOut,
    MoviePage,
    ReviewIn,
    ReviewOut,
    SleepOut,
    WorldOut,
    clamp_queries,
)
from sampleproject.catalog.seeding import WORLD_ROWS

api = NinjaAPI(title="djbench sample API", version="1", docs_url=None, openapi_url=None)
sync = Router(tags=["sync"])
aio = Router(tags=["async"])

EXTRA_FORTUNE = "Additional fortune added at request time."
# /ballast: memory a page leaves behind in the process that served it (a cache warmed on
# first use), so that the effect of one scenario on the next one's memory can be
# measured (djbench issue 22 item 4, loadtests/order_effect.py). Kept for the process's
# life; allocated once per size.
BALLAST: dict[int, bytearray] = {}


def _ballast(mb: int) -> dict[str, int]:
    if mb not in BALLAST:
        block = bytearray(mb * 1024 * 1024)
        block[::4096] = b"\x01" * len(block[::4096])  # touched: resident, so in PSS
        BALLAST[mb] = block
    return {"held_mb": sum(len(b) for b in BALLAST.values()) // (1024 * 1024)}


def _page_bounds(page: int) -> tuple[int, int]:
    start = (page - 1) * PAGE_SIZE
    return start, start + PAGE_SIZE


def _render_fortunes(messages: list[tuple[int, str]]) -> HttpResponse:
    messages.append((0, EXTRA_FORTUNE))
    messages.sort(key=lambda row: row[1])
    html = render_to_string("catalog/fortunes.html", {"fortunes": messages})
    return HttpResponse(html, content_type="text/html; charset=utf-8")


def _review_row(body: ReviewIn) -> Review:
    return Review(
        movie_id=body.movie_id, author=body.author, score=body.score, comment=body.comment
    )


UPSERT = {
    "update_conflicts": True,
    "unique_fields": ["movie", "author"],
    "update_fields": ["score", "comment"],
}


# --- sync -------------------------------------------------------------------------


@sync.get("/health", response=HealthOut)
def health_sync(request: HttpRequest) -> dict[str, str]:
    return {"status": "ok"}


@sync.get("/health/deep", response={200: dict, 503: dict})
def deep_health_sync(request: HttpRequest) -> Status[dict[str, object]]:
    return Status(*health.deep_health())


@sync.get("/movies", response=MoviePage)
def movies_sync(request: HttpRequest, page: int = Query(1, ge=1)) -> dict[str, object]:
    start, end = _page_bounds(page)
    count = Movie.objects.count()
    rows = list(Movie.objects.order_by("id")[start:end])
    return {"count": count, "page": page, "page_size": PAGE_SIZE, "results": rows}


@sync.post("/members/{member_id}/touch", response={200: MemberOut, 404: ErrorOut})
def touch_sync(request: HttpRequest, member_id: int) -> object:
    member = Member.objects.filter(pk=member_id).first()
    if member is None:
        return Status(404, {"detail": f"member {member_id} not found"})
    member.last_login = timezone.now()
    member.save(update_fields=["last_login"])
    return member


@sync.get("/queries", response=list[WorldOut])
def queries_sync(request: HttpRequest, queries: str | None = None) -> list[World]:
    count = clamp_queries(queries)
    ids = [random.randint(1, WORLD_ROWS) for _ in range(count)]
    return [World.objects.get(pk=pk) for pk in ids]


@sync.get("/fortunes")
def fortunes_sync(request: HttpRequest) -> HttpResponse:
    return _render_fortunes(list(Fortune.objects.values_list("id", "message")))


@sync.post("/reviews", response={200: ReviewOut, 404: ErrorOut})
def review_sync(request: HttpRequest, body: ReviewIn) -> object:
    if not Movie.objects.filter(pk=body.movie_id).exists():
        return Status(404, {"detail": f"movie {body.movie_id} not found"})
    Review.objects.bulk_create([_review_row(body)], **UPSERT)  # type: ignore[arg-type]
    return body


@sync.get("/sleep", response=SleepOut)
def sleep_sync(request: HttpRequest, ms: int = Query(0, ge=0, le=MAX_SLEEP_MS)) -> dict[str, int]:
    time.sleep(ms / 1000)  # blocks the worker (thread, greenlet or process)
    return {"slept_ms": ms}


@sync.get("/ballast", response=BallastOut)
def ballast_sync(
    request: HttpRequest, mb: int = Query(50, ge=1, le=MAX_BALLAST_MB)
) -> dict[str, int]:
    return _ballast(mb)


# --- async ------------------------------------------------------------------------


@aio.get("/health", response=HealthOut)
async def health_async(request: HttpRequest) -> dict[str, str]:
    return {"status": "ok"}


@aio.get("/health/deep", response={200: dict, 503: dict})
async def deep_health_async(request: HttpRequest) -> Status[dict[str, object]]:
    return Status(*await health.adeep_health())


@aio.get("/movies", response=MoviePage)
async def movies_async(request: HttpRequest, page: int = Query(1, ge=1)) -> dict[str, object]:
    start, end = _page_bounds(page)
    count = await Movie.objects.acount()
    rows = [movie async for movie in Movie.objects.order_by("id")[start:end]]
    return {"count": count, "page": page, "page_size": PAGE_SIZE, "results": rows}


@aio.post("/members/{member_id}/touch", response={200: MemberOut, 404: ErrorOut})
async def touch_async(request: HttpRequest, member_id: int) -> object:
    member = await Member.objects.filter(pk=member_id).afirst()
    if member is None:
        return Status(404, {"detail": f"member {member_id} not found"})
    member.last_login = timezone.now()
    await member.asave(update_fields=["last_login"])
    return member


@aio.get("/queries", response=list[WorldOut])
async def queries_async(request: HttpRequest, queries: str | None = None) -> list[World]:
    count = clamp_queries(queries)
    ids = [random.randint(1, WORLD_ROWS) for _ in range(count)]
    return [await World.objects.aget(pk=pk) for pk in ids]


@aio.get("/fortunes")
async def fortunes_async(request: HttpRequest) -> HttpResponse:
    rows = [row async for row in Fortune.objects.values_list("id", "message")]
    return _render_fortunes(rows)


@aio.post("/reviews", response={200: ReviewOut, 404: ErrorOut})
async def review_async(request: HttpRequest, body: ReviewIn) -> object:
    if not await Movie.objects.filter(pk=body.movie_id).aexists():
        return Status(404, {"detail": f"movie {body.movie_id} not found"})
    await Review.objects.abulk_create([_review_row(body)], **UPSERT)  # type: ignore[arg-type]
    return body


@aio.get("/sleep", response=SleepOut)
async def sleep_async(
    request: HttpRequest, ms: int = Query(0, ge=0, le=MAX_SLEEP_MS)
) -> dict[str, int]:
    await asyncio.sleep(ms / 1000)  # yields the event loop
    return {"slept_ms": ms}


@aio.get("/ballast", response=BallastOut)
async def ballast_async(
    request: HttpRequest, mb: int = Query(50, ge=1, le=MAX_BALLAST_MB)
) -> dict[str, int]:
    return _ballast(mb)


api.add_router("/sync/", sync)
api.add_router("/async/", aio)
