"""Start a server as its own process tree, wait until it answers, stop the whole tree.

Every process is started in a new session (so its own process group), with output to a
log file. The tree is re-listed while it runs so that a worker re-parented to init
after its master died is still known and stopped by PID. Nothing is ever stopped by
name. Every started tree is registered until stopped, so that an interrupted run can
stop what is left (:func:`stop_all`); and, for when runbench itself is killed, each tree
dies with it (parent-death signal), is recorded on disk while it runs, and is reaped by
a watchdog process or the next runbench (:func:`reap`).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from djbench.exceptions import DIRECTORY_VARIABLE
from djbench.launch import deaths
from djbench.plan.options import redact
from djbench.results.model import Command

READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


class ServerError(Exception):
    """A server that could not start or died; the message is one readable sentence."""


class PortBusy(ServerError):
    pass


def command_record(argv: Sequence[str], env: dict[str, str], cwd: Path) -> Command:
    """The exact command as results record it: argv, one shell line, the variables we set
    (a URL's password written as ***)."""
    return Command(
        argv=[redact(a) for a in argv],
        shell=redact(shlex.join(argv)),
        env={k: redact(v) for k, v in sorted(env.items())},
        cwd=str(cwd),
    )


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def check_port_free(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortBusy(f"port {port} on {host} is already in use") from None
            if exc.errno == errno.EACCES:
                raise PortBusy(f"no permission to listen on port {port} on {host}") from None
            raise PortBusy(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def pinned(argv: Sequence[str], cpus: Sequence[int] | None) -> list[str]:
    """Prefix argv with taskset so that the whole tree is pinned from its first instruction.

    (Setting the affinity after Popen would race with servers that fork at once.)
    """
    if not cpus:
        return list(argv)
    taskset = shutil.which("taskset")
    if taskset is None:
        raise ServerError("CPU pinning needs `taskset` (util-linux), which is not on PATH")
    return [taskset, "-c", ",".join(str(c) for c in cpus), *argv]


def _pin_threads(cpus: set[int]) -> None:
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(ProcessLookupError):  # a thread that just ended
            os.sched_setaffinity(int(task.name), cpus)


@contextlib.contextmanager
def pinned_self(cpus: Sequence[int]) -> Iterator[None]:
    """Keep this process (every thread it has, and every thread it starts) on `cpus`.

    runbench's own work during a run (its sampler thread, the progress display, the
    Python that waits for the driver) must not run on the server's CPUs: unpinned, the
    scheduler puts it wherever there is room, which is the server's core when the
    driver's is busy. New threads inherit the affinity of the thread that starts them.
    """
    if not cpus or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    _pin_threads(set(cpus))
    try:
        yield
    finally:
        _pin_threads(before)


@functools.cache
def deathsig_prefix() -> tuple[str, ...]:
    """`setpriv --pdeathsig KILL --` (util-linux) when this machine has it.

    The kernel then kills the started process when the runbench thread that started it
    dies, even by SIGKILL (an out-of-memory kill, a cancelled CI job): cleanup code
    cannot run then, but this does. The flag survives the exec into taskset and the
    server. It is not inherited by the server's own workers: those are reaped from the
    on-disk record (:func:`reap`) at runbench's next start. Not part of the recorded
    command (it changes nothing about how the server runs).
    """
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return ()
    try:
        usage = subprocess.run(
            [setpriv, "--help"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return (setpriv, "--pdeathsig", "KILL", "--") if "--pdeathsig" in usage.stdout else ()


RECORD_DIR = "pids"  # in a run's folder: one file per running process group
# Every process djbench starts, and everything those start, carries a token of its tree
# in this variable: the proof of ownership reap() asks for before it kills anything.
TOKEN_VARIABLE = "DJBENCH_PROCESS_TREE"


@dataclass
class ProcessTree:
    """A started process and everything it spawns."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log_path: Path
    stop_signal: int = signal.SIGTERM
    popen: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    # Where the record of this process group is kept while it runs (reap() reads it).
    record_dir: Path | None = None
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    _known: dict[int, psutil.Process] = field(default_factory=dict)
    # Who may have ended it: the signals djbench sent it, the cgroup's OOM kills at start.
    sent: list[int] = field(default_factory=list)
    oom_before: int | None = None

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            try:
                self.popen = subprocess.Popen(
                    [*deathsig_prefix(), *self.argv],
                    cwd=self.cwd,
                    env={**self.env, TOKEN_VARIABLE: self.token, **self.audit_env()},
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                raise ServerError(f"{self.name} could not be started: {exc.strerror}") from None
        self.started_at = time.monotonic()
        self.oom_before = deaths.oom_kills()
        _REGISTRY[self.pid] = self
        self.processes()
        self._write_record()

    @property
    def application_name(self) -> str:
        """The name its PostgreSQL connections carry (libpq and psycopg read PGAPPNAME
        from the environment; a project whose settings set application_name overrides it,
        and its connections are then not counted: djbench.measure.resource_watch says so)."""
        return self.env.get("PGAPPNAME") or f"djbench-{self.token}"

    @property
    def exceptions_dir(self) -> Path:
        """Where its processes write the exceptions they raise (djbench.exceptions)."""
        return self.log_path.parent / "exceptions" / self.token

    def audit_env(self) -> dict[str, str]:
        """What lets runbench see the server's database connections and exceptions
        without touching the project's settings."""
        with contextlib.suppress(OSError):
            self.exceptions_dir.mkdir(parents=True, exist_ok=True)
        return {"PGAPPNAME": self.application_name, DIRECTORY_VARIABLE: str(self.exceptions_dir)}

    def _record_path(self) -> Path | None:
        return None if self.record_dir is None else self.record_dir / f"{self.pid}.json"

    def _write_record(self) -> None:
        path = self._record_path()
        if path is None:
            return
        with contextlib.suppress(OSError, psutil.Error):  # a record helps; it never stops a run
            path.parent.mkdir(parents=True, exist_ok=True)
            record = {
                "pid": self.pid,
                "pgid": os.getpgid(self.pid),
                "create_time": psutil.Process(self.pid).create_time(),
                "name": self.name,
                "token": self.token,
                "argv": self.argv,
                "owner": os.getpid(),
                "owner_started": psutil.Process().create_time(),
            }
            path.write_text(json.dumps(record))

    def exited(self) -> int | None:
        """The leader's exit code, or None while it runs."""
        return None if self.popen is None else self.popen.poll()

    def ended(self) -> str:
        """How the leader ended, and who sent the signal as far as can be known."""
        code = self.exited()
        if code is None:
            return "still running"
        return deaths.cause(code, self.pid, self.sent, self.oom_before)

    def processes(self) -> list[psutil.Process]:
        """The live processes of the tree (re-listed now; remembered for stop())."""
        if self.popen is None:
            return []
        found: list[psutil.Process] = []
        try:
            leader = self._known.get(self.pid) or psutil.Process(self.pid)
            self._known.setdefault(self.pid, leader)
            if leader.is_running() and leader.status() != psutil.STATUS_ZOMBIE:
                found.append(leader)
                for child in leader.children(recursive=True):
                    self._known.setdefault(child.pid, child)
                    found.append(child)
        except psutil.NoSuchProcess:
            pass
        # Orphans of a dead master keep running under init: still ours.
        for proc in self._known.values():
            if proc not in found and _alive(proc):
                found.append(proc)
        return found

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def wait_ready(
        self,
        url: str,
        timeout: float = READY_TIMEOUT,
        cafile: Path | None = None,
        headers: dict[str, str] | None = None,
    ) -> float:
        """Poll url until it answers 200; return the seconds it took since start. An
        https url is checked against `cafile` (a TLS proxy's own CA), once it exists.
        Redirects are not followed (a redirect to HTTPS is said as such), and a 400
        that lasts BAD_REQUEST_S ends the wait at once: Django answers it to a Host
        its ALLOWED_HOSTS does not list, which no waiting mends."""
        deadline = time.monotonic() + timeout
        last, first_400 = "no answer", None
        opener = urllib.request.build_opener(_NoRedirect)
        while time.monotonic() < deadline:
            code = self.exited()
            if code is not None:
                raise ServerError(
                    f"{self.name} ended ({self.ended()}) before it was ready; "
                    f"last lines of {self.log_path}:\n{self.log_tail()}"
                )
            self.processes()
            status, last = _poll(opener, url, cafile, headers or {})
            if status == 200:
                return time.monotonic() - self.started_at
            first_400 = (first_400 or time.monotonic()) if status == 400 else None
            if first_400 is not None and time.monotonic() - first_400 > BAD_REQUEST_S:
                host = urllib.parse.urlsplit(url).hostname
                raise ServerError(
                    f"{self.name} answers {url} with HTTP 400 (Bad Request): Django's answer "
                    f"to a Host header its ALLOWED_HOSTS does not list; add {host!r} to "
                    "ALLOWED_HOSTS in the settings you benchmark with"
                )
            time.sleep(0.1)
        raise ServerError(
            f"{self.name} was not ready after {timeout:.0f}s ({last}); "
            f"last lines of {self.log_path}:\n{self.log_tail()}"
        )

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Graceful signal to the leader, wait for the whole tree, then kill what is left.

        After a second interrupt (:func:`terminate_on_signals`) there is no grace: kill.
        """
        if self.popen is None:
            return
        if _FORCE.is_set():
            timeout = 0.0
        procs = self.processes()
        if self.exited() is None:
            self.sent.append(self.stop_signal)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, self.stop_signal)
        elif procs:
            # The master is gone: nobody forwards the signal to its orphaned workers.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, self.stop_signal)
        alive = procs
        deadline = time.monotonic() + timeout
        while alive and time.monotonic() < deadline and not _FORCE.is_set():
            gone, alive = psutil.wait_procs(alive, timeout=0.1)
            self._reaped(gone)
        if alive:
            self.sent.append(signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            for proc in alive:
                with contextlib.suppress(psutil.NoSuchProcess):
                    proc.kill()
            self._reaped(psutil.wait_procs(alive, timeout=5)[0])
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)
        _REGISTRY.pop(self.pid, None)
        path = self._record_path()
        if path is not None:
            path.unlink(missing_ok=True)

    def _reaped(self, gone: list[psutil.Process]) -> None:
        """psutil reaps a child it waits for, and Popen then reads exit code 0 (its own
        wait finds no child): the leader's real status is kept from psutil's."""
        for proc in gone:
            code = getattr(proc, "returncode", None)
            if proc.pid == self.pid and code is not None and self.popen is not None:
                self.popen.returncode = int(code)

    def survivors(self) -> list[psutil.Process]:
        return [p for p in self._known.values() if _alive(p)]


BAD_REQUEST_S = 2.0


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # the 3xx comes back as an HTTPError: said, not followed


def _poll(
    opener: urllib.request.OpenerDirector,
    url: str,
    cafile: Path | None,
    headers: dict[str, str],
) -> tuple[int, str]:
    """One readiness request: (status or 0, what it said)."""
    try:
        if cafile is not None and not cafile.exists():
            return 0, f"no certificate yet at {cafile}"
        context = ssl.create_default_context(cafile=str(cafile)) if cafile else None
        handlers = [urllib.request.HTTPSHandler(context=context)] if context else []
        if handlers:
            opener = urllib.request.build_opener(_NoRedirect, *handlers)
        request = urllib.request.Request(url, headers=headers)
        with opener.open(request, timeout=2) as response:
            return response.status, f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        where = exc.headers.get("Location", "") if exc.headers else ""
        return exc.code, f"HTTP {exc.code}" + (f" to {where}" if where else "")
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(getattr(exc, "reason", exc))


def _alive(proc: psutil.Process) -> bool:
    try:
        # is_running() also checks the create time: a reused PID is not ours.
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


_REGISTRY: dict[int, ProcessTree] = {}


_FORCE = threading.Event()  # set by a second interrupt: stop without waiting


def stop_all() -> None:
    """Stop every tree still running (interrupted runs, failures)."""
    for tree in list(_REGISTRY.values()):
        tree.stop(timeout=5)


def _same_process(pid: int, created: float | None) -> bool:
    """Is `pid` the process that was started at `created` (not a reused PID)?"""
    try:
        proc = psutil.Process(pid)
        return created is None or abs(proc.create_time() - float(created)) < 0.01
    except psutil.Error:
        return False


def reap(folder: Path, owner: int | None = None) -> list[str]:
    """Stop process groups that a runbench recorded under `folder` and left running.

    With `owner`, the groups that runbench (that PID) started, alive or not: what the
    watchdog does when its runbench dies. Without, the groups of every runbench that is
    no longer running: what each runbench does at its start. A process is ours only when
    it is in the recorded process group *and* carries the tree's token in its
    environment (so a reused PID or group id is never touched); orphaned workers are
    reaped with their group. Never by name. Returns what was stopped, one phrase each;
    the records are removed.
    """
    stopped = []
    for record_path in sorted(folder.glob(f"*/{RECORD_DIR}/*.json")):
        try:
            record = json.loads(record_path.read_text())
            pgid, token = int(record["pgid"]), str(record["token"])
        except (OSError, ValueError, KeyError, TypeError):
            record_path.unlink(missing_ok=True)
            continue
        runbench = int(record.get("owner", 0))
        if owner is not None and runbench != owner:
            continue
        if owner is None and _same_process(runbench, record.get("owner_started")):
            continue  # a runbench that is still running owns it
        # The leader may be gone (killed by its parent-death signal) while its workers,
        # orphaned, still run in its group: the group is what is reaped, and only the
        # members that carry the tree's token in their environment (a group id reused
        # by someone else's processes is never touched).
        members = _group(pgid, token) if pgid > 1 else []
        for proc in members:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(members, timeout=5)
        if members:
            name = record.get("name", "?")
            stopped.append(f"{name} (process group {pgid}, {len(members)} process(es))")
        record_path.unlink(missing_ok=True)
    return stopped


_WATCHDOG: list[subprocess.Popen[bytes]] = []


def start_watchdog(folder: Path) -> None:
    """A small process that outlives runbench: when runbench dies in any way (SIGKILL
    included), the pipe from runbench closes and the watchdog stops every process group
    runbench recorded under `folder` (see :mod:`djbench.launch.watchdog`)."""
    if _WATCHDOG and _WATCHDOG[0].poll() is None:
        return
    _WATCHDOG[:] = [
        subprocess.Popen(
            [sys.executable, "-m", "djbench.launch.watchdog", str(folder), str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C to runbench's group does not reach it
        )
    ]


def _group(pgid: int, token: str) -> list[psutil.Process]:
    """The processes of group `pgid` that carry `token` (:data:`TOKEN_VARIABLE`)."""
    found: list[psutil.Process] = []
    if not token:
        return found
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == pgid and proc.environ().get(TOKEN_VARIABLE) == token:
                found.append(proc)
    return found


@contextlib.contextmanager
def running(tree: ProcessTree) -> Iterator[ProcessTree]:
    """Start the tree and stop it however the block ends (like pyperf's popen_killer)."""
    try:
        tree.start()
        yield tree
    finally:
        tree.stop()


SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _interrupt_once(signum: int, frame: object) -> None:
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def interrupt_once() -> Iterator[None]:
    """A command run from a shell: its first SIGINT, SIGTERM or SIGHUP interrupts it (as
    KeyboardInterrupt) and it is then on its way out, so later ones are ignored. A second
    Ctrl-C while it says why it stopped, saves or exits must not turn its exit 130 into
    death by signal (CI met it: a first Ctrl-C just after the servers were stopped, the
    second 0.3 s later during the interpreter's exit, status -2).
    :func:`terminate_on_signals` handles them while servers run, inside this."""
    previous = {s: signal.signal(s, _interrupt_once) for s in SIGNALS}
    yield
    # (Left ignored when an exception leaves: the command is ending.) Not interrupted:
    # whoever called gets its handlers back.
    for s, h in previous.items():
        signal.signal(s, h)


@contextlib.contextmanager
def terminate_on_signals() -> Iterator[None]:
    """The first SIGINT, SIGTERM or SIGHUP stops gracefully (as KeyboardInterrupt, so that
    cleanup code runs); a second one forces: the stopping goes on without waiting for
    graceful exits, and is never cut off half-way. Handlers are restored only once every
    started process is stopped."""
    received = []

    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        if len(received) == 1:
            raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")
        _FORCE.set()  # cleanup is under way: make it quick, do not interrupt it

    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        interrupted = bool(received)
        received.append(0)  # from here on, any signal only forces
        try:
            stop_all()
        finally:
            for s, h in previous.items():
                # After an interrupt the command is about to exit: a late Ctrl-C must
                # not turn a clean stop into a traceback. (Only where nobody else had
                # a handler: an embedding program gets its own back.)
                ours = (signal.default_int_handler, signal.SIG_DFL, _interrupt_once)
                late = interrupted and h in ours
                signal.signal(s, signal.SIG_IGN if late else h)
            _FORCE.clear()


class ExistingTree(ProcessTree):
    """A process tree djbench did not start (--target-pid): watched, never signalled.

    Memory is sampled from it like any other tree; start() and stop() do nothing,
    because djbench stops only what it started. Without a PID it has no processes, and
    no memory is reported.
    """

    def __init__(self, name: str, pid: int | None, log_path: Path) -> None:
        super().__init__(name=name, argv=[], env={}, cwd=Path.cwd(), log_path=log_path)
        self._pid = pid
        self._leader: psutil.Process | None = None
        if pid is not None:
            try:
                self._leader = psutil.Process(pid)
            except psutil.NoSuchProcess:
                raise ServerError(f"--target-pid {pid}: no such process") from None

    @property
    def pid(self) -> int:
        return self._pid or 0

    def start(self) -> None:
        self.started_at = time.monotonic()

    def exited(self) -> int | None:
        if self._leader is None:
            return None  # nothing to watch: the target's health is its answers
        return None if _alive(self._leader) else 0

    def processes(self) -> list[psutil.Process]:
        if self._leader is None or not _alive(self._leader):
            return []
        try:
            return [self._leader, *self._leader.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        return None  # not ours to stop

    def log_tail(self, lines: int = 15) -> str:
        return ""
