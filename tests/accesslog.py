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


def count_in(log: Path, edges: list[list[float]]) -> int:
    """Locust's requests the server logged inside the workers' mean window."""
    opened = sum(e[0] for e in edges) / len(edges)
    closed = sum(e[1] for e in edges) / len(edges)
    stamps = [
        float(line.split(" ", 1)[0])
        for line in log.read_text().splitlines()
        if "gevent-http-client" in line
    ]
    return sum(opened <= t <= closed for t in stamps)
