"""The same data for every deployment (issue 54 item 3).

A scenario that writes (a POST, or a GET an endpoint's clients call that records a row:
``writes = true``, which benchinit finds) changes the data under every page: the next
deployment would meet a bigger table. Interleaving spreads such a drift over the
deployments but does not remove it. So when the run loads a page that writes, the
servers never see the project's own database: a snapshot of it is taken once, and every
server lifetime (the verify gate's and each timed one) starts on a fresh copy of that
snapshot, the same for every deployment:

- **SQLite**: the file copied (sqlite3's online backup, consistent while another
  process reads it) into the run's folder;
- **PostgreSQL**: ``CREATE DATABASE ... TEMPLATE`` (a file-level copy, about a second
  for a small database); the snapshot and the copy are dropped at the end.

A server reads the copy's name from ``DJBENCH_DATABASE_NAME`` (djbench's AppConfig puts
it in ``DATABASES["default"]["NAME"]`` of a server runbench started; nothing else is
changed). The project's database is never written by the run, and is left as found.

Where a copy cannot be made (another database engine, another session holding the
database so that PostgreSQL refuses it as a template, no rights to create databases),
the servers use the project's database as before and the run says so next to its
figures (``DataRecord.method = "shared"`` and its reason).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from djbench.apps import DATABASE_NAME_VARIABLE
from djbench.launch import dbsessions
from djbench.launch.process import ServerError
from djbench.results.plan_model import DataRecord

ENV = DATABASE_NAME_VARIABLE  # read by djbench.apps in a server runbench started


@dataclass
class DataState:
    """How each lifetime's data is made the same: `fresh()` before every server start."""

    record: DataRecord
    _make: Callable[[], str] | None = None  # the copy's name, for DJBENCH_DATABASE_NAME
    _drop: list[Callable[[], None]] = field(default_factory=list)

    def fresh(self) -> None:
        """A fresh copy of the snapshot for the next server (its name in the
        environment the servers start with). A copy that fails fails that server's
        start (a finding for its deployment; the run goes on), never on shared data."""
        if self._make is None:
            return
        try:
            os.environ[ENV] = self._make()
        except Exception as exc:  # a database error, a full disk
            os.environ.pop(ENV, None)
            reason = " ".join(str(exc).split())[:300]
            raise ServerError(f"the data could not be copied for this lifetime: {reason}") from exc
        self.record.lifetimes += 1

    def close(self) -> None:
        os.environ.pop(ENV, None)
        for drop in reversed(self._drop):
            with contextlib.suppress(Exception):
                drop()


_active: list[DataState] = []  # the run's, while same_data() holds it


def fresh() -> None:
    """Before a server starts (djbench.launch.live.deploy): a fresh copy, when the run
    makes them."""
    if _active:
        _active[-1].fresh()


@contextlib.contextmanager
def same_data(run_dir: Path, writes: list[str]) -> Iterator[DataState]:
    """A DataState for the run: copies per lifetime when a scenario writes (`writes`:
    their names), else nothing to do; the copies removed at the end, whatever ends it."""
    state = _begin(run_dir, writes)
    _active.append(state)
    try:
        yield state
    finally:
        _active.remove(state)
        state.close()


def _begin(run_dir: Path, writes: list[str]) -> DataState:
    from django.db import connections

    wrapper = connections["default"]
    vendor = wrapper.vendor
    if not writes:
        return DataState(DataRecord(method="unchanged", vendor=vendor))
    record = DataRecord(method="copied", vendor=vendor, writes=writes)
    try:
        if vendor == "sqlite":
            return _sqlite(run_dir, str(wrapper.settings_dict["NAME"]), record)
        if vendor == "postgresql":
            return _postgres(record)
        why = f"djbench copies SQLite and PostgreSQL databases, not {vendor}"
    except Exception as exc:  # the copy refused: say why, measure on the shared data
        why = " ".join(str(exc).split())[:300]
    return DataState(DataRecord(method="shared", vendor=vendor, writes=writes, why=why))


def _sqlite(run_dir: Path, name: str, record: DataRecord) -> DataState:
    folder = run_dir / "data"
    folder.mkdir(parents=True, exist_ok=True)
    snapshot = folder / "snapshot.sqlite3"
    with (
        contextlib.closing(sqlite3.connect(name)) as source,
        contextlib.closing(sqlite3.connect(snapshot)) as target,
    ):
        source.backup(target)
    copy = folder / "lifetime.sqlite3"

    def make() -> str:
        shutil.copyfile(snapshot, copy)
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{copy}{suffix}").unlink(missing_ok=True)
        return str(copy)

    record.how = "the SQLite file copied from a snapshot taken at the start"
    return DataState(record, make, [lambda: shutil.rmtree(folder, ignore_errors=True)])


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _postgres(record: DataRecord) -> DataState:
    """A template of the project's database, then a copy of it per lifetime."""
    from django.db import connections

    conninfo = dbsessions.postgres_conninfo()
    assert conninfo is not None
    original = str(conninfo["dbname"])
    base = f"{original[:40]}_djbench_{os.getpid()}"
    snapshot, copy = f"{base}_snapshot", f"{base}_lifetime"
    admin = {**conninfo, "dbname": "postgres", "application_name": "djbench-data"}
    connections.close_all()  # runbench's own session would block the template
    with dbsessions.connect(admin) as conn:
        conn.execute(f"CREATE DATABASE {_quoted(snapshot)} TEMPLATE {_quoted(original)}")

    def make() -> str:
        with dbsessions.connect(admin) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {_quoted(copy)} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {_quoted(copy)} TEMPLATE {_quoted(snapshot)}")
        return copy

    def drop() -> None:
        with dbsessions.connect(admin) as conn:
            for name in (copy, snapshot):
                conn.execute(f"DROP DATABASE IF EXISTS {_quoted(name)} WITH (FORCE)")

    record.how = (
        f"a PostgreSQL copy (CREATE DATABASE ... TEMPLATE) of a snapshot of {original} "
        "taken at the start"
    )
    return DataState(record, make, [drop])
