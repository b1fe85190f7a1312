"""A gunicorn access log whose lines carry the wall clock to the microsecond, to hold a
driver's windowed count against what the server answered inside the same window
(gunicorn's own %(t)s has whole seconds): the log goes through Python's logging
(`--log-config-json`), whose %(created)f is the time the line was written, right after
the response was sent."""

from __future__ import annotations

import json
from pathlib import Path


def access_log_config(tmp_path: Path) -> tuple[Path, Path]:
    """Gunicorn's access log through logging, each line stamped with the wall clock."""
    log, config = tmp_path / "access.log", tmp_path / "log.json"
    handler = {"class": "logging.FileHandler", "filename": str(log), "formatter": "t"}
    access = {"level": "INFO", "handlers": ["access"], "propagate": False}
    config.write_text(
        json.dumps(
            {
                "version": 1,
                "disable_existing_loggers": False,
                "formatters": {"t": {"format": "%(created).6f %(message)s"}},
                "handlers": {"access": handler},
                "loggers": {"gunicorn.access": access},
                # gunicorn lays this over its defaults, whose root logger names a handler
                # this replaces: without a root of its own, "Unable to configure root logger"
                "root": {"level": "WARNING", "handlers": []},
            }
        )
    )
    return log, config


def count_in(log: Path, edges: list[list[float]]) -> tuple[int, int]:
    """Locust's requests the server logged inside every worker's window and inside any.

    Each worker opens and closes its own window, a few milliseconds from the others', and
    counts what completed inside it: the sum of the workers' counts lies between the
    log's count over the windows' intersection and its count over their union (one mean
    window is not a bound: CI's namespace run was 31 of 4,600 off it, 0.67%)."""
    inner = (max(e[0] for e in edges), min(e[1] for e in edges))
    outer = (min(e[0] for e in edges), max(e[1] for e in edges))
    stamps = [
        float(line.split(" ", 1)[0])
        for line in log.read_text().splitlines()
        if "gevent-http-client" in line
    ]
    return (
        sum(inner[0] <= t <= inner[1] for t in stamps),
        sum(outer[0] <= t <= outer[1] for t in stamps),
    )


def assert_counted(log: Path, edges: list[list[float]], requests: int) -> None:
    """The driver's windowed count is the server's, within 0.5% of the bounds above."""
    low, high = count_in(log, edges)
    spread_ms = (max(e[0] for e in edges) - min(e[0] for e in edges)) * 1000
    print(f"djbench {requests}, the server's log {low}-{high} (windows {spread_ms:.1f} ms apart)")
    slack = 0.005 * requests
    assert low - slack <= requests <= high + slack, (low, requests, high)
