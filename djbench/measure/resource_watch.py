"""What a server holds besides memory, over one window: threads, descriptors, database
connections, and the exceptions it raised (issue 24).

- Threads and descriptors come with every sampler reading (djbench.measure.sampler:
  /proc/PID/stat and /proc/PID/fd over the tree); here they become start, peak and end.
- Database connections: on PostgreSQL, a thread in runbench's process reads
  ``pg_stat_activity`` every POLL_S during the window, counting by state the backends
  whose ``application_name`` is the server's (runbench starts every server with
  ``PGAPPNAME=djbench-<its tree's token>``, which libpq and psycopg read; the project's
  settings are not touched, and a project that sets its own application_name is not
  matched: `db` is then absent and the guide says why it cannot tell). One more reading
  AFTER_S after the window closes shows what the server keeps when the load stops.
- Exceptions: the server's processes append one line per exception to files in the
  tree's exceptions folder (djbench.exceptions); the lines written between the window's
  edges are counted by type and message.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from djbench.exceptions import SETTINGS_SUFFIX
from djbench.launch.dbsessions import postgres_conninfo as postgres_conninfo
from djbench.launch.process import ProcessTree
from djbench.results.model import DbConnections, ExceptionCount, Resources

POLL_S = 0.25
# The "after" reading: what the server keeps once the load has stopped. Taken in a
# thread AFTER_S after the window closes, joined when the trial is recorded (the driver
# is usually still draining by then, so the wait costs the run next to nothing).
AFTER_S = 0.2
TOP_EXCEPTIONS = 5
QUERY = (
    "SELECT coalesce(state, 'unknown'), count(*), application_name = %s "
    "FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() "
    "GROUP BY 1, 3"
)


class DbPoller:
    """pg_stat_activity every POLL_S in a thread: the server's connections by state."""

    def __init__(self, conninfo: dict[str, Any], application_name: str) -> None:
        self.conninfo = conninfo
        self.name = application_name
        self.readings: list[tuple[dict[str, int], int]] = []  # (server's by state, others)
        self.max_connections: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="db-poller", daemon=True)
        self._connection: Any = None
        self._after: threading.Thread | None = None
        self._after_reading: tuple[dict[str, int], int] | None = None

    def start(self) -> DbPoller:
        try:
            import psycopg  # a project on psycopg2 alone gets no readings (said: db absent)
        except ImportError:
            return self
        try:
            self._connection = psycopg.connect(**self.conninfo, autocommit=True, connect_timeout=5)
            row = self._connection.execute("SHOW max_connections").fetchone()
            self.max_connections = int(row[0]) if row else None
        except psycopg.Error:
            self._connection = None  # no reading is better than a failed trial
            return self
        self._thread.start()
        return self

    def read(self) -> tuple[dict[str, int], int] | None:
        import psycopg

        if self._connection is None:
            return None
        try:
            rows = self._connection.execute(QUERY, (self.name,)).fetchall()
        except psycopg.Error:
            return None
        ours = {state: count for state, count, mine in rows if mine}
        return ours, sum(count for _, count, mine in rows if not mine)

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            if (reading := self.read()) is not None:
                self.readings.append(reading)

    def stop(self) -> None:
        """Stop polling; the "after" reading AFTER_S later, in a thread (see `result`)."""
        if self._connection is None:
            return
        self._stop.set()
        self._after = threading.Thread(target=self._read_after, name="db-after", daemon=True)
        self._after.start()

    def _read_after(self) -> None:
        self._thread.join(timeout=5)
        time.sleep(AFTER_S)
        self._after_reading = self.read()
        with contextlib.suppress(Exception):
            self._connection.close()

    def result(self) -> DbConnections | None:
        """The window's figures (waits for the "after" reading)."""
        if self._connection is None or self._after is None:
            return None
        self._after.join(timeout=10)
        after = self._after_reading
        during = self.readings or ([after] if after else [])
        if not during:
            return None
        peak_states, others = max(during, key=lambda r: sum(r[0].values()))
        return DbConnections(
            application_name=self.name,
            peak=sum(peak_states.values()),
            states_at_peak=peak_states,
            after=sum(after[0].values()) if after else None,
            states_after=after[0] if after else {},
            readings=len(self.readings),
            max_connections=self.max_connections,
            others_peak=others,
        )


class ExceptionLines:
    """The exception lines the tree's processes wrote between start() and read()."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.offsets: dict[Path, int] = {}

    def start(self) -> ExceptionLines:
        self.offsets = {path: path.stat().st_size for path in self._files()}
        return self

    def _files(self) -> list[Path]:
        with contextlib.suppress(OSError):
            return sorted(self.folder.glob("*.jsonl"))
        return []

    def settings(self) -> dict[str, Any]:
        """The database settings a process of the server reported (djbench.exceptions)."""
        for path in sorted(self.folder.glob(f"*{SETTINGS_SUFFIX}")):
            with contextlib.suppress(OSError, ValueError):
                found = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(found, dict):
                    return found
        return {}

    def read(self) -> Counter[tuple[str, str]]:
        found: Counter[tuple[str, str]] = Counter()
        for path in self._files():
            try:
                with path.open("rb") as handle:
                    handle.seek(self.offsets.get(path, 0))
                    chunk = handle.read()
            except OSError:
                continue
            for raw in chunk.splitlines():
                with contextlib.suppress(ValueError, AttributeError):
                    line = json.loads(raw)
                    found[(str(line["type"]), str(line["message"]))] += 1
        return found


class ResourceWatch:
    """Started with the window's samplers and stopped with them; `record` then gives the
    window's Resources from the server sampler's readings."""

    def __init__(self, tree: ProcessTree, conninfo: dict[str, Any] | None) -> None:
        self.db = DbPoller(conninfo, tree.application_name) if conninfo else None
        self.lines = ExceptionLines(tree.exceptions_dir)
        self.connections: DbConnections | None = None
        self.exceptions: Counter[tuple[str, str]] = Counter()
        self._stopped = False

    def start(self) -> ResourceWatch:
        self.lines.start()
        if self.db is not None:
            self.db.start()
        return self

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.exceptions = self.lines.read()
        if self.db is not None:
            self.db.stop()

    def record(self, threads: list[int], fds: list[int]) -> Resources | None:
        if self.db is not None:
            self.connections = self.db.result()
        if self.connections is not None:
            reported = self.lines.settings()
            self.connections.conn_max_age = reported.get("conn_max_age")
            self.connections.pool_max = reported.get("pool_max")
        if not threads or not fds:
            return None
        return Resources(
            threads=(threads[0], max(threads), threads[-1]),
            fds=(fds[0], max(fds), fds[-1]),
            db=self.connections,
            exceptions=[
                ExceptionCount(type=kind, message=message, count=count)
                for (kind, message), count in self.exceptions.most_common(TOP_EXCEPTIONS)
            ],
            exceptions_total=sum(self.exceptions.values()),
        )
