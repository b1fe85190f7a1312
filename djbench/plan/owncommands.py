"""The deployment a team runs now, as its scenario file records it (a ``[[deployment]]``):
the command that starts it, where it was found, its layout where written as a number.
benchinit finds them in the project's files (djbench.servers.discovery); runbench starts
each as written (djbench.launch.own_launch)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OwnCommand:
    """One way the project's site is served, as its files write it."""

    name: str  # "yours-uwsgi": its label in runbench's tables (--servers takes it)
    server: str  # djbench's registry entry it is measured as ("uwsgi", "gunicorn-sync")
    command: str  # as written, paths made the project's ("uwsgi ./etc/uwsgi.ini")
    found_in: str  # "Procfile (web); Dockerfile CMD"
    workers: int | None = None  # None: not written as a number
    threads: int | None = None
    config: str | None = None  # the config file it reads, relative to the project
    # What djbench changes to run a file written for a container from the project
    # ("chdir = /opt/app: the project's folder instead"), one line each (issue 54).
    changes: tuple[str, ...] = ()
    # False: it closes every connection after its answer (uWSGI's http-socket without
    # http-keepalive, as a proxy in front expects): loaded with a connection per request.
    keep_alive: bool = True

    def layout(self) -> str:
        """'2 workers x 4 threads', or what is unknown about it."""
        workers = f"{self.workers} worker(s)" if self.workers else "workers as its environment sets"
        return workers + (f" x {self.threads} thread(s)" if self.threads else "")
