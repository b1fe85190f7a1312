"""Start a server as its own process tree, wait until it answers, stop the whole tree.

Every process is started in a new session (so its own process group), with output to a
log file. The tree is re-listed while it runs so that a worker re-parented to init
after its master died is still known and stopped by PID. Nothing is ever stopped by
name. Every started tree is registered until stopped, so that an interrupted run can
stop what is left (:func:`stop_all`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from djbench.results.model import Command

READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


class ServerError(Exception):
    """A server that could not start or died; the message is one readable sentence."""


class PortBusy(ServerError):
    pass


def command_record(argv: Sequence[str], env: dict[str, str], cwd: Path) -> Command:
    """The exact command as results record it: argv, one shell line, the variables we set."""
    return Command(
        argv=list(argv), shell=shlex.join(argv), env=dict(sorted(env.items())), cwd=str(cwd)
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
    _known: dict[int, psutil.Process] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            try:
                self.popen = subprocess.Popen(
                    self.argv,
                    cwd=self.cwd,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                raise ServerError(f"{self.name} could not be started: {exc.strerror}") from None
        self.started_at = time.monotonic()
        _REGISTRY[self.pid] = self
        self.processes()

    def exited(self) -> int | None:
        """The leader's exit code, or None while it runs."""
        return None if self.popen is None else self.popen.poll()

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

    def wait_ready(self, url: str, timeout: float = READY_TIMEOUT) -> float:
        """Poll url until it answers 200; return the seconds it took since start."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            code = self.exited()
            if code is not None:
                raise ServerError(
                    f"{self.name} exited with code {code} before it was ready; "
                    f"last lines of {self.log_path}:\n{self.log_tail()}"
                )
            self.processes()
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return time.monotonic() - self.started_at
                    last = f"HTTP {response.status}"
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
            except (urllib.error.URLError, OSError) as exc:
                last = str(getattr(exc, "reason", exc))
            time.sleep(0.1)
        raise ServerError(
            f"{self.name} was not ready after {timeout:.0f}s ({last}); "
            f"last lines of {self.log_path}:\n{self.log_tail()}"
        )

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Graceful signal to the leader, wait for the whole tree, then kill what is left."""
        if self.popen is None:
            return
        procs = self.processes()
        if self.exited() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, self.stop_signal)
        _gone, alive = psutil.wait_procs(procs, timeout=timeout)
        if alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            for proc in alive:
                with contextlib.suppress(psutil.NoSuchProcess):
                    proc.kill()
            psutil.wait_procs(alive, timeout=5)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)
        _REGISTRY.pop(self.pid, None)

    def survivors(self) -> list[psutil.Process]:
        return [p for p in self._known.values() if _alive(p)]


def _alive(proc: psutil.Process) -> bool:
    try:
        # is_running() also checks the create time: a reused PID is not ours.
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


_REGISTRY: dict[int, ProcessTree] = {}


def stop_all() -> None:
    """Stop every tree still running (interrupted runs, failures)."""
    for tree in list(_REGISTRY.values()):
        tree.stop(timeout=5)


@contextlib.contextmanager
def running(tree: ProcessTree) -> Iterator[ProcessTree]:
    """Start the tree and stop it however the block ends (like pyperf's popen_killer)."""
    try:
        tree.start()
        yield tree
    finally:
        tree.stop()


@contextlib.contextmanager
def terminate_on_signals() -> Iterator[None]:
    """Turn SIGTERM (and SIGHUP) into KeyboardInterrupt so that cleanup code runs."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        stop_all()
