"""Why a server's process ended, in words: its exit code, or the signal and who sent it
as far as this machine can tell.

A signal's sender is known to the receiving process only, so the candidates are ruled
in or out from what is recorded elsewhere:

- **djbench itself**: the process tree records every signal it sends (stopping it).
- **The kernel's OOM killer**: the memory cgroup's ``oom_kill`` counter (cgroup v2
  ``memory.events``, v1 ``memory.oom_control``) is read when the server starts and
  again when it is found dead; a rise means the OOM killer killed in this cgroup
  meanwhile. The kernel log (``dmesg``, when this user may read it) names the PID.
- **Anything else** (another process, the system outside this cgroup): what is left
  when neither of the above holds, said as such.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import subprocess
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _memory_cgroup() -> tuple[Path | None, str]:
    """This process's memory cgroup folder and its version ("v1", "v2")."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            number, controllers, path = line.split(":", 2)
            if number == "0" and not controllers:
                for folder in (CGROUP_ROOT / path.lstrip("/"), CGROUP_ROOT):
                    if (folder / "memory.events").exists():
                        return folder, "v2"
            if "memory" in controllers.split(","):
                for folder in (CGROUP_ROOT / "memory" / path.lstrip("/"), CGROUP_ROOT / "memory"):
                    if (folder / "memory.oom_control").exists():
                        return folder, "v1"
    return None, ""


def oom_kills() -> int | None:
    """How many processes the OOM killer has killed in this memory cgroup (None: unknown)."""
    folder, version = _memory_cgroup()
    if folder is None:
        return None
    name = "memory.events" if version == "v2" else "memory.oom_control"
    with contextlib.suppress(OSError, ValueError):
        for line in (folder / name).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    return None


def kernel_says(pid: int) -> str | None:
    """The kernel log's line about killing `pid`, when this user may read the log."""
    dmesg = shutil.which("dmesg")
    if dmesg is None:
        return None
    try:
        out = subprocess.run([dmesg], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = [
        line for line in out.stdout.splitlines() if re.search(rf"Killed process {pid}\b", line)
    ]
    return found[-1].strip() if found else None


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "an unknown signal"


def exit_words(code: int) -> str:
    """'exit code 3', or 'signal 9 (SIGKILL)' for a negative Popen return code."""
    return f"exit code {code}" if code >= 0 else f"signal {-code} ({signal_name(-code)})"


def cause(code: int, pid: int, sent: list[int], oom_before: int | None) -> str:
    """How the process `pid` ended (Popen's return `code`) and, for a signal, who sent it:
    `sent` is what djbench sent it, `oom_before` the cgroup's OOM kills at its start."""
    said = exit_words(code)
    if code >= 0:
        return said
    if -code in sent:
        return f"{said}, sent by djbench while stopping it"
    now = oom_kills()
    if oom_before is not None and now is not None and now > oom_before:
        line = kernel_says(pid)
        return (
            f"{said}, by the kernel's OOM killer (this memory cgroup's oom_kill count rose "
            f"from {oom_before} to {now}" + (f"; kernel log: {line}" if line else "") + ")"
        )
    if (line := kernel_says(pid)) is not None:
        return f"{said}; kernel log: {line}"
    known = "" if now is None else ", and the OOM killer killed nothing in this memory cgroup"
    return (
        f"{said}, not sent by djbench{known}: another process, or the system outside "
        "this cgroup, sent it"
    )
