"""A cost probe: the instructions one request of a page executes, counted.

Each page is requested in a child process (djbench.measure.cost_child) through the
project's own WSGI or ASGI application, under Valgrind's callgrind, once per hash
seed. The count is made deterministic by pinning what moves it between identical runs:
the hash seed (``PYTHONHASHSEED``), the address layout (``setarch -R``: ASLR off), the
environment (the same for every seed and cell) and the interpreter. The project's path
length is recorded: string sizes follow it (matrix cells in worktrees of different
lengths are not pinned to each other).

**The warm-up rule** (SETTLED): after a few requests, segments of requests are counted
one by one until two consecutive segments agree within 0.2% per request, or two
consecutive pairs of segments do (the garbage collector makes every other segment
costlier on some pages), at most MAX_SEGMENTS; the figure is the mean of the last four
segments (two when only three were counted). A page whose count never settles is still
counted, and marked (``settled`` false): its spread says how far to trust it. The
imports, set-up and warm-up run with Valgrind's instrumentation off; the parent switches
it on (``vgdb``) before the first marker.

What the count leaves out: time waiting for the database or the network, the GIL and
concurrency, the server's own work (a server is not in the loop: see the server cost),
and whatever the machine's caches do to each instruction.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from djbench.launch.process import ProcessTree, command_record
from djbench.plan.project import Project
from djbench.plan.scenarios import Scenario
from djbench.results.model import Notice, PageCost, SeedCount

SETTLED = 0.002  # consecutive segments within this share of each other
MIN_SEGMENTS = 2
MAX_SEGMENTS = 8
WARMUP_CYCLES = 3  # each path of the page this many times before the first marker
SEGMENT_INSTRUCTIONS = 150_000_000  # what a segment is sized to (a few seconds)
MAX_PER_SEGMENT = 50
SEGMENT_TIMEOUT_S = 300.0  # no segment of a page takes longer: a finding, not a hang
VALGRIND_PACKAGE = "valgrind"  # Debian's and most distributions' name


def valgrind() -> str | None:
    return shutil.which("valgrind")


def valgrind_version() -> str:
    path = valgrind()
    if path is None:
        return ""
    done = subprocess.run(
        [path, "--version"], capture_output=True, text=True, check=False, timeout=60
    )
    return done.stdout.strip()


Interface = Literal["wsgi", "asgi"]


@dataclass(frozen=True)
class Probe:
    """One page to count: its requests (each path once a cycle) and its interface."""

    scenario: str
    interface: Interface
    requests: tuple[dict[str, Any], ...]
    status: int


def interface_of(scenario: Scenario) -> Interface:
    """ASGI for a page only ASGI serves or an async variant; WSGI otherwise."""
    asgi = scenario.interfaces == ("asgi",) or scenario.variant == "async"
    return "asgi" if asgi else "wsgi"


def probes(scenarios: list[Scenario]) -> list[Probe]:
    """A probe per plain HTTP page: a mix's pages each once (by their own names)."""
    found: dict[str, Probe] = {}
    for scenario in scenarios:
        for page in [p.scenario for p in scenario.mix] or [scenario]:
            if page.kind == "http" and page.name not in found:
                found[page.name] = _probe(page)
    return list(found.values())


def _probe(scenario: Scenario) -> Probe:
    request = scenario.request
    requests = tuple(
        {
            "method": request.method,
            "path": path,
            "body": request.body,
            "content_type": request.content_type,
            "headers": [list(h) for h in request.all_headers()],
        }
        for path in request.path_list()
    )
    return Probe(scenario.name, interface_of(scenario), requests, scenario.expect.status)


def argv(out_dir: Path, plan_path: Path) -> list[str]:
    """The exact command of one count (ASLR off where setarch exists)."""
    counted = [
        valgrind() or "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",  # on once the child is warm (instrument())
        "--dump-before=getsid",
        "--dump-line=no",
        f"--callgrind-out-file={out_dir}/cg.%p",
        sys.executable,
        "-m",
        CHILD,
        str(plan_path),
    ]
    setarch = shutil.which("setarch")
    return [setarch, platform.machine(), "-R", *counted] if setarch else counted


CHILD = "djbench.measure.cost_child"


def _child_plan(project: Project, probe: Probe, work: Path, **extra: Any) -> Path:
    """The child's plan (djbench.measure.cost_child), written beside its output."""
    plan = {
        "app": project.asgi_app if probe.interface == "asgi" else project.wsgi_app,
        "interface": probe.interface,
        "requests": list(probe.requests),
        "status": probe.status,
        "warmup": WARMUP_CYCLES * len(probe.requests),
        "per_segment": len(probe.requests),
        "out": str(work / "found.json"),
        **extra,
    }
    path = work / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def dump_total(path: Path) -> int:
    """The instructions one callgrind dump counted (its ``summary:`` or ``totals:``)."""
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise ValueError(f"{path} has no summary line")


@dataclass
class CountedTree(ProcessTree):
    """A child whose environment names nothing of this run (no folder, no random token):
    with the hash seed pinned, a variable's text moves os.environ's layout and so the
    count (two identical probes in folders "one" and "two" differed by 0.1% until
    their environments were the same). Its token is the same for every probe: ownership
    still needs its recorded process group as well (djbench.launch.process.reap)."""

    token: str = "djbench-cost-probe"

    def audit_env(self) -> dict[str, str]:
        return {}


class ProbeFailed(Exception):
    def __init__(self, notice: Notice) -> None:
        super().__init__(notice.code)
        self.notice = notice


def count(
    project: Project, probe: Probe, seed: int, work: Path, collector: bool = False
) -> tuple[SeedCount, dict[str, Any]]:
    """One child under Valgrind with one hash seed: its count, and what the page did.
    It runs in a folder named by page and seed alone (:func:`pinned`), kept in `work`.
    `collector`: leave the cyclic garbage collector on while counting (the figure a
    server's tree, which runs with it, is compared with: djbench.measure.server_cost)."""
    with pinned(probe, seed) as pin:
        try:
            return _count(project, probe, seed, pin, collector)
        finally:
            shutil.copytree(
                pin, work, dirs_exist_ok=True, ignore=shutil.ignore_patterns("up", "down")
            )


@contextmanager
def pinned(probe: Probe, seed: int) -> Iterator[Path]:
    """The same folder for the same page and seed, in every run and every matrix cell:
    the child's plan, pipes and dumps are named from it, and their text moves the count
    (two probes in folders "one" and "two" differed by 0.05%; in one folder, by 0).
    Locked while used: a second runbench counting the same page waits its turn."""
    digest = hashlib.sha256(f"{probe.scenario}\0{seed}".encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / "djbench-cost" / digest
    folder.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f"{digest}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for left in folder.iterdir():
            left.unlink()
        try:
            yield folder
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _count(
    project: Project, probe: Probe, seed: int, work: Path, collector: bool
) -> tuple[SeedCount, dict[str, Any]]:
    up, down = work / "up", work / "down"
    for fifo in (up, down):
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo)
    out = work / "found.json"
    plan_path = _child_plan(project, probe, work, fifos=[str(up), str(down)], collector=collector)
    command = argv(work, plan_path)
    env = project.server_env({"PYTHONHASHSEED": str(seed)})
    tree = CountedTree(f"cost {probe.scenario}", command, env, project.directory, work / "log")
    started = time.monotonic()
    reader = os.open(up, os.O_RDONLY | os.O_NONBLOCK)
    try:
        tree.start()
        segments = _segments(tree, reader, down, work, len(probe.requests))
    finally:
        os.close(reader)
        tree.stop(timeout=30)
    found = json.loads(out.read_text()) if out.exists() else {}
    if "refused" in found:
        raise ProbeFailed(Notice(code="cost_status", params=found["refused"]))
    if not found:
        raise ProbeFailed(Notice(code="cost_crashed", params={"log": tree.log_tail(8)}))
    return (
        SeedCount(
            seed=seed,
            instructions=_figure(_last(segments)),
            segments=[total for total, _ in segments],
            per_segment=segments[-1][1],
            settled=_settled(segments),
            seconds=round(time.monotonic() - started, 1),
            command=command_record(command, {"PYTHONHASHSEED": str(seed)}, project.directory),
        ),
        found,
    )


def _per_request(segment: tuple[int, int]) -> float:
    total, requests = segment
    return total / requests


def _settled(segments: list[tuple[int, int]]) -> bool:
    """Two consecutive segments agree, or (the garbage collector's rhythm: measured on
    the sample, every other segment 0.3-1.7% costlier) two consecutive pairs do."""
    if len(segments) < MIN_SEGMENTS + 1:  # the first is one cycle, sized the others
        return False
    if _agree(segments[-2:-1], segments[-1:]):
        return True
    return len(segments) >= 2 * MIN_SEGMENTS + 1 and _agree(segments[-4:-2], segments[-2:])


def _agree(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    x, y = _figure(a), _figure(b)
    return abs(x - y) <= SETTLED * max(x, y)


def _figure(segments: list[tuple[int, int]]) -> float:
    """Per request over the given segments (a page's figure: its last four after the
    first when there are, so that the collector's rhythm is averaged, else its last two)."""
    return sum(t for t, _ in segments) / sum(n for _, n in segments)


def _last(segments: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return segments[-4:] if len(segments) >= 5 else segments[-2:]


def _segments(
    tree: ProcessTree, reader: int, down: Path, work: Path, cycle: int
) -> list[tuple[int, int]]:
    """Talk to the child segment by segment: (instructions, requests) of each, the first
    (one cycle of paths) sizing the others to SEGMENT_INSTRUCTIONS."""
    segments: list[tuple[int, int]] = []
    writer: int | None = None
    buffer = b""
    per_segment = cycle
    try:
        while True:
            line, buffer = _line(tree, reader, buffer)
            if line is None:
                return segments
            if line == "ready":
                writer = _writer(tree, down)  # the child waits in its read meanwhile
                instrument(tree)
                os.write(writer, b"go\n")
                continue
            number = int(line.split()[1])
            segments.append((dump_total(_dump(work, tree.pid, number + 1)), per_segment))
            if writer is None:
                writer = _writer(tree, down)
            if len(segments) == 1:
                each = max(1.0, _per_request(segments[0]))
                cycles = max(
                    1, min(MAX_PER_SEGMENT // cycle, round(SEGMENT_INSTRUCTIONS / each / cycle))
                )
                per_segment = cycles * cycle
            done = _settled(segments) or len(segments) >= MAX_SEGMENTS
            os.write(writer, b"stop\n" if done else f"more {per_segment}\n".encode())
            if done:
                _line(tree, reader, buffer)  # the child's end
                return segments
    finally:
        if writer is not None:
            os.close(writer)


def instrument(tree: ProcessTree) -> None:
    """Switch the child's instrumentation on (it ran its imports and warm-up without:
    Django's set-up is 0.9 billion instructions here, 18 of a count's 25 seconds when
    counted) through vgdb, which ships with Valgrind and reaches the child, blocked in a
    read, through ptrace (the child allowed it; a kernel that forbids ptrace altogether,
    Yama's ptrace_scope 3, makes this the page's finding)."""
    path = valgrind()
    vgdb = shutil.which("vgdb") or (str(Path(path).with_name("vgdb")) if path else "vgdb")
    command = [vgdb, f"--pid={tree.pid}", "instrumentation", "on"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProbeFailed(Notice(code="cost_vgdb", params={"error": str(exc)})) from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()[-1:]
        raise ProbeFailed(Notice(code="cost_vgdb", params={"error": " ".join(said)}))


def _writer(tree: ProcessTree, down: Path) -> int:
    """The pipe down, once the child opened its end (a child that died never does)."""
    deadline = time.monotonic() + SEGMENT_TIMEOUT_S
    while True:
        try:
            return os.open(down, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            if tree.exited() is not None or time.monotonic() > deadline:
                raise ProbeFailed(
                    Notice(code="cost_crashed", params={"log": tree.log_tail(8)})
                ) from None
            time.sleep(0.05)


def _dump(work: Path, pid: int, number: int) -> Path:
    """The dump of a marker: callgrind numbers them from 1 (set-up is the first)."""
    for candidate in work.glob(f"cg.*.{number}"):
        return candidate
    raise ProbeFailed(Notice(code="cost_no_dump", params={"number": number}))


def _line(tree: ProcessTree, reader: int, buffer: bytes) -> tuple[str | None, bytes]:
    """The child's next line, or None when it ended; a silent child is stopped."""
    deadline = time.monotonic() + SEGMENT_TIMEOUT_S
    while b"\n" not in buffer:
        if time.monotonic() > deadline:
            raise ProbeFailed(Notice(code="cost_timeout", params={"seconds": SEGMENT_TIMEOUT_S}))
        ready, _, _ = select.select([reader], [], [], 0.5)
        chunk = os.read(reader, 4096) if ready else b""
        if not chunk and tree.exited() is not None:
            return None, buffer
        buffer += chunk
    line, _, rest = buffer.partition(b"\n")
    return line.decode(), rest


def measure(project: Project, probe: Probe, seeds: tuple[int, ...], work: Path) -> PageCost:
    """A page's cost over the seeds; a failure is the page's finding."""
    page = PageCost(scenario=probe.scenario, interface=probe.interface)
    found: dict[str, Any] = {}
    try:
        for seed in seeds:
            counted, found = count(project, probe, seed, work / probe.scenario / f"seed-{seed}")
            page.counts.append(counted)
    except ProbeFailed as failed:
        page.status, page.reason = "failed", failed.notice
        return page
    except (OSError, ValueError) as exc:  # a folder, a pipe, a dump we could not read
        page.status, page.reason = "failed", Notice(code="cost_error", params={"error": str(exc)})
        return page
    page.functions = attribute(project, probe, seeds[0], work / probe.scenario / "opcodes")
    figures = [c.instructions for c in page.counts]
    page.instructions = statistics.median(figures)
    page.spread = (max(figures) - min(figures)) / page.instructions
    page.queries = found.get("queries")
    page.fingerprints = found.get("fingerprints", {})
    page.response_bytes = found.get("response_bytes")
    return page


def attribute(project: Project, probe: Probe, seed: int, work: Path) -> dict[str, float]:
    """Each Python function's own opcodes per request (djbench.measure.opcodes), in a
    child outside Valgrind (seconds); empty when it failed (the count stands alone)."""
    work.mkdir(parents=True, exist_ok=True)
    out = work / "found.json"
    command = [sys.executable, "-m", CHILD, str(_child_plan(project, probe, work, attribute=True))]
    env = project.server_env({"PYTHONHASHSEED": str(seed)})
    tree = ProcessTree(f"opcodes {probe.scenario}", command, env, project.directory, work / "log")
    try:
        tree.start()
        assert tree.popen is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            tree.popen.wait(timeout=SEGMENT_TIMEOUT_S)
    finally:
        tree.stop(timeout=10)
    found = json.loads(out.read_text()) if out.exists() else {}
    return dict(found.get("functions", {}))


def scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="djbench-cost-"))
