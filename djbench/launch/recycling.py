"""Worker recycling in each server's own options: how a --recycle setting (by requests,
jitter, memory, lifetime) becomes that server's flags, what it ignores, and what it
refuses (djbench.launch.servers names the function each server uses)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from djbench.plan.recycle import Recycle

# Worker recycling by request count is switched off for benchmarks: a recycle inside a
# timed window would be measured as the server's cost, and the servers do not all have
# it (Granian recycles by lifetime, Daphne not at all). Worse, with ONE process Uvicorn
# does not recycle but exits (seen here: `--workers 1 --limit-max-requests 5` answered 6
# requests, then exited with code 0; a lean-middleware run lost uvicorn mid-run). 0 means
# "off" for uWSGI and Gunicorn; Uvicorn and Hypercorn have no "off" value on the command
# line, hence the largest int.
NO_RECYCLE = str(2**31 - 1)


@dataclass(frozen=True)
class RecycleFlags:
    """A --recycle setting in one server's own options."""

    argv: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # parts it has no option for
    refused: str | None = None  # why it cannot recycle as asked (then nothing is run)
    strip: tuple[str, ...] = ()  # options to drop from its deploy/*.args file first


def _parts(recycle: Recycle) -> dict[str, int]:
    found = {
        "max-requests": recycle.max_requests,
        "jitter": recycle.jitter,
        "max-rss": recycle.max_rss,
        "lifetime": recycle.lifetime,
    }
    return {k: v for k, v in found.items() if v is not None}


def _mapped(server: str, recycle: Recycle, options: dict[str, list[str]], has: str) -> RecycleFlags:
    """`options`: part -> the server's flag (and its value's prefix); the rest ignored."""
    parts = _parts(recycle)
    argv = [
        arg for key, value in parts.items() if key in options for arg in [*options[key], str(value)]
    ]
    ignored = [key for key in parts if key not in options]
    if not any(key in options for key in parts if key != "jitter"):
        return RecycleFlags(
            refused=f"{server} cannot recycle by {', '.join(ignored)}: it recycles {has}"
        )
    return RecycleFlags(argv=argv, ignored=ignored)


# Recycling per server (checked with the versions in each one's Features.checked_with):
# - Gunicorn: --max-requests N --max-requests-jitter J (random 0..J per worker); no memory
#   or age limit. The master restarts the worker; requests queue in the listen backlog.
# - uWSGI: --max-requests N, --max-requests-delta J (worker i gets N + i x J: staggered,
#   not random), --reload-on-rss MB, --max-worker-lifetime S. Pitfall: a worker is never
#   recycled before --min-worker-lifetime (default 10 s), whatever max-requests says.
# - Uvicorn: --limit-max-requests N --limit-max-requests-jitter J; with ONE process it
#   does not recycle but exits (seen with 0.54: the server is gone); with --workers >= 2
#   the supervisor starts a new worker (seen: both workers replaced after 200 requests).
# - Hypercorn: --max-requests N --max-requests-jitter J; recycles with one worker too
#   (seen with 0.18: its worker process is replaced, the parent stays).
# - Granian: --workers-lifetime S (at least 60 s) and --workers-max-rss MB (checked every
#   --rss-sample-interval, default 30 s); no request count.
# - Daphne: no recycling at all (one process; restart it from outside).
def uwsgi_recycle(recycle: Recycle, workers: int) -> RecycleFlags:
    if recycle.off:
        return RecycleFlags(argv=["--max-requests", "0", "--reload-on-rss", "0"])
    return _mapped(
        "uwsgi",
        recycle,
        {
            "max-requests": ["--max-requests"],
            "jitter": ["--max-requests-delta"],
            "max-rss": ["--reload-on-rss"],
            "lifetime": ["--max-worker-lifetime"],
        },
        "by requests, memory and lifetime",
    )


def gunicorn_recycle(recycle: Recycle, workers: int) -> RecycleFlags:
    if recycle.off:
        return RecycleFlags(argv=["--max-requests", "0"])
    if recycle.max_requests is not None and recycle.jitter is None:
        # The shipped gunicorn.conf.py sets max_requests_jitter = 1000: without an
        # explicit 0, max-requests=100 recycled after 100-1,100 requests (seen in a churn
        # run: no restart in a 6 s window at 50 req/s per worker).
        recycle = dataclasses.replace(recycle, jitter=0)
    return _mapped(
        "gunicorn",
        recycle,
        {"max-requests": ["--max-requests"], "jitter": ["--max-requests-jitter"]},
        "by requests only (max_requests + jitter)",
    )


def uvicorn_recycle(recycle: Recycle, workers: int) -> RecycleFlags:
    if recycle.off:
        return RecycleFlags(argv=["--limit-max-requests", NO_RECYCLE])
    if workers < 2 and recycle.max_requests is not None:
        return RecycleFlags(
            refused="uvicorn with one process exits at --limit-max-requests instead of "
            "recycling; run --workers 2 or more"
        )
    return _mapped(
        "uvicorn",
        recycle,
        {
            "max-requests": ["--limit-max-requests"],
            "jitter": ["--limit-max-requests-jitter"],
        },
        "by requests only (--limit-max-requests)",
    )


def hypercorn_recycle(recycle: Recycle, workers: int) -> RecycleFlags:
    if recycle.off:
        return RecycleFlags(argv=["--max-requests", NO_RECYCLE])
    return _mapped(
        "hypercorn",
        recycle,
        {"max-requests": ["--max-requests"], "jitter": ["--max-requests-jitter"]},
        "by requests only (--max-requests)",
    )


GRANIAN_RECYCLE = ("--workers-lifetime", "--workers-max-rss")


def granian_recycle(recycle: Recycle, workers: int) -> RecycleFlags:
    if recycle.off:
        return RecycleFlags(strip=GRANIAN_RECYCLE)
    if recycle.lifetime is not None and recycle.lifetime < 60:
        return RecycleFlags(refused="granian's --workers-lifetime is at least 60 s")
    found = _mapped(
        "granian",
        recycle,
        {"max-rss": ["--workers-max-rss"], "lifetime": ["--workers-lifetime"]},
        "by memory (--workers-max-rss) and lifetime (--workers-lifetime)",
    )
    return RecycleFlags(
        argv=found.argv, ignored=found.ignored, refused=found.refused, strip=GRANIAN_RECYCLE
    )


def daphne_recycle(recycle: Recycle, workers: int) -> RecycleFlags:
    if recycle.off:
        return RecycleFlags()
    return RecycleFlags(refused="daphne has no worker recycling (restart it from outside)")
