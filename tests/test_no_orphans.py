"""Nothing left behind, whatever ends runbench: SIGKILL, a stale record, a second Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import psutil
import pytest
from django.core.management import call_command

from djbench.launch.process import RECORD_DIR, TOKEN_VARIABLE
from djbench.measure.drivers import DRIVERS
from tests.live import MARK, ROOT, census, marked, still_running, watch_children

pytestmark = pytest.mark.servers


def runbench(*args: str, mark: str = "") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "manage.py", "runbench", "--no-setup", *args],
        cwd=ROOT,
        env={**os.environ, MARK: mark},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def gone_within(seen: dict[int, psutil.Process], seconds: float) -> list[psutil.Process]:
    deadline = time.monotonic() + seconds
    left = still_running(seen)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = still_running(seen)
    return left


def is_driver(proc: psutil.Process) -> bool:
    """wrk, or the builtin driver (djbench.measure.drivers.loadgen)."""
    try:
        return proc.name() == "wrk" or "djbench.measure.drivers.loadgen" in proc.cmdline()
    except psutil.Error:
        return False


def test_sigkill_mid_trial_leaves_nothing(live_database: str, tmp_path: Path) -> None:
    # gunicorn-sync with two workers: the master dies by its parent-death signal, the
    # orphaned workers by the watchdog; the load driver too.
    mark = f"sigkill-{os.getpid()}-{time.monotonic_ns()}"
    assert marked(mark) == []
    proc = runbench(
        "--servers",
        "gunicorn-sync",
        "--workers",
        "2",
        "--scenarios",
        "health-sync",
        "--trials",
        "1",
        "--duration",
        "20",
        "--warmup",
        "0.5",
        "--driver",
        "wrk" if DRIVERS["wrk"].available() else "builtin",
        "--output",
        str(tmp_path),
        mark=mark,
    )
    seen = watch_children(
        proc.pid,
        until=lambda seen: any(is_driver(p) for p in seen.values()) and len(seen) >= 5,
        timeout=90,
    )
    before = len(still_running(seen))
    during = len(marked(mark))  # runbench, gunicorn's master and workers, the driver
    assert any(is_driver(p) for p in seen.values()), "no timed window started"
    proc.kill()
    proc.communicate(timeout=30)
    left = gone_within(seen, 5.0)
    assert left == [], f"{before} processes before, left after 5 s: {left}"
    assert census("SIGKILL of runbench mid-trial", mark, during) == 0
    # The records the run kept of its process groups are gone with them.
    assert list(tmp_path.glob(f"*/{RECORD_DIR}/*.json")) == []


def test_the_next_start_reaps_what_a_killed_runbench_left(tmp_path: Path) -> None:
    token = "deadbeefcafe0001"
    ours = subprocess.Popen(
        ["sleep", "60"], start_new_session=True, env={**os.environ, TOKEN_VARIABLE: token}
    )
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)  # no token
    dead = subprocess.Popen(["true"])
    dead.wait()
    records = tmp_path / "20260101T000000Z-abcdef" / RECORD_DIR
    records.mkdir(parents=True)
    for proc, tok in ((ours, token), (stranger, "0123456789abcdef")):
        (records / f"{proc.pid}.json").write_text(
            json.dumps(
                {
                    "pid": proc.pid,
                    "pgid": proc.pid,
                    "create_time": psutil.Process(proc.pid).create_time(),
                    "name": "sleep",
                    "token": tok,
                    "owner": dead.pid,  # a runbench that is no longer running
                    "owner_started": 0.0,
                }
            )
        )
    try:
        out = StringIO()
        call_command("runbench", "--list", "--output", str(tmp_path), stdout=out)
        assert f"stopped sleep (process group {ours.pid}, 1 process(es))" in out.getvalue()
        ours.wait(timeout=5)  # (its status was collected by the reaper: psutil waits)
        assert not psutil.pid_exists(ours.pid)
        # A process without the tree's token is never touched, whatever a record says.
        assert stranger.poll() is None
        assert list(records.glob("*.json")) == []
    finally:
        for proc in (ours, stranger):
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)


def command(process: psutil.Process) -> str:
    """Its command line, or "" once it has exited (between still_running() and this:
    CI met the race, and the failed test then left its runbench running)."""
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def test_a_second_interrupt_forces_and_does_not_abort_cleanup(
    live_database: str, tmp_path: Path
) -> None:
    # Hypercorn takes the longest to stop gracefully (about 1.7 s here): the second
    # Ctrl-C lands while runbench waits for it.
    mark = f"second-sigint-{os.getpid()}-{time.monotonic_ns()}"
    proc = runbench("--verify-only", "--servers", "hypercorn", "--output", str(tmp_path), mark=mark)

    def serving(seen: dict[int, psutil.Process]) -> bool:
        return any("hypercorn" in command(p) for p in still_running(seen))

    try:
        seen = watch_children(proc.pid, until=serving, timeout=60)
        assert serving(seen), "runbench started no server"
        time.sleep(0.5)
        during = len(marked(mark))
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:  # a failure above must not leave runbench to the next test
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert gone_within(seen, 2.0) == []
    assert census("two SIGINTs during cleanup", mark, during) == 0


def test_a_second_interrupt_while_the_command_exits_keeps_exit_130() -> None:
    # The race CI met: the first Ctrl-C just after the servers were stopped (outside
    # terminate_on_signals), the second while the command says why and exits. Made
    # deterministic here: the script signals itself at both moments.
    script = (
        "import os, signal, sys\n"
        "from djbench.launch.process import interrupt_once\n"
        "try:\n"
        "    with interrupt_once():\n"
        "        try:\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "            signal.pause()\n"
        "        except KeyboardInterrupt:\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "            sys.exit(130)\n"
        "finally:\n"
        "    os.kill(os.getpid(), signal.SIGINT)  # and one more during the exit\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=30)
    assert (done.returncode, done.stderr) == (130, b"")
