"""The machine's own state during a timed window, from /proc/stat and /proc/cpuinfo.

On a shared VM the hypervisor can take CPU time away from this machine (steal): a trial
taken while it did reads low for reasons that have nothing to do with the server. Each
trial records the steal over its window, how busy the server's and the driver's CPUs
were, the share of that busy time other processes took (the CPUs' busy time minus
what the server tree and the driver used themselves: a package install or a browser on
the same cores shows here, and not only as a slower server), and the mean clock of the
CPUs where the kernel shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from djbench.results.model import MachineLoad

STAT = Path("/proc/stat")
CPUINFO = Path("/proc/cpuinfo")
# /proc/stat columns after the cpu name: user nice system idle iowait irq softirq steal
_IDLE, _IOWAIT, _STEAL = 3, 4, 7

Ticks = dict[str, list[int]]


def parse_stat(text: str) -> Ticks:
    """{"cpu": [...], "cpu0": [...], ...} from /proc/stat's text."""
    found: Ticks = {}
    for line in text.splitlines():
        name, *values = line.split()
        if name.startswith("cpu"):
            found[name] = [int(v) for v in values[:8]] + [0] * (8 - len(values[:8]))
    return found


def read_stat(path: Path = STAT) -> Ticks | None:
    try:
        return parse_stat(path.read_text())
    except OSError:
        return None


def _busy(before: list[int], after: list[int]) -> tuple[int, int, int]:
    """(busy, total, steal) ticks between two readings of one cpu line."""
    delta = [a - b for a, b in zip(after, before, strict=True)]
    total = sum(delta)
    idle = delta[_IDLE] + delta[_IOWAIT]
    return total - idle - delta[_STEAL], total, delta[_STEAL]


def _percent(part: int, whole: int) -> float | None:
    return round(part / whole * 100, 1) if whole > 0 else None


def _cpus_busy(before: Ticks, after: Ticks, cpus: Sequence[int]) -> float | None:
    busy = total = 0
    for cpu in cpus:
        name = f"cpu{cpu}"
        if name in before and name in after:
            b, t, _ = _busy(before[name], after[name])
            busy, total = busy + b, total + t
    return _percent(busy, total)


def mean_mhz(path: Path = CPUINFO) -> float | None:
    try:
        values = [
            float(line.split(":", 1)[1])
            for line in path.read_text().splitlines()
            if line.startswith("cpu MHz")
        ]
    except (OSError, ValueError):
        return None
    return round(sum(values) / len(values), 1) if values else None


def load(
    before: Ticks | None,
    after: Ticks | None,
    server_cpus: Sequence[int],
    driver_cpus: Sequence[int],
) -> MachineLoad | None:
    """What the machine did between two readings; None where /proc/stat is not there."""
    if not before or not after or "cpu" not in before or "cpu" not in after:
        return None
    busy, total, steal = _busy(before["cpu"], after["cpu"])
    return MachineLoad(
        steal_percent=_percent(steal, total) or 0.0,
        busy_percent=_percent(busy, total),
        server_cpus_busy_percent=_cpus_busy(before, after, server_cpus) if server_cpus else None,
        driver_cpus_busy_percent=_cpus_busy(before, after, driver_cpus) if driver_cpus else None,
        mhz=mean_mhz(),
    )


def with_foreign(
    found: MachineLoad | None,
    server_percent: float | None,
    server_cpus: Sequence[int],
    driver_percent: float | None,
) -> MachineLoad | None:
    """`found` with the busy time other processes took on the server's and the driver's
    CPUs: busy % minus the tree's own (% of one core, spread over its CPUs) and the
    driver's own (% of its CPUs). Clamped at 0: the two readings are not taken at the
    same instants."""
    if found is None:
        return None

    def other(busy: float | None, own: float | None) -> float | None:
        return None if busy is None or own is None else round(max(busy - own, 0.0), 1)

    own_server = server_percent / max(1, len(server_cpus)) if server_percent is not None else None
    return found.model_copy(
        update={
            "server_cpus_foreign_percent": other(found.server_cpus_busy_percent, own_server),
            "driver_cpus_foreign_percent": other(found.driver_cpus_busy_percent, driver_percent),
        }
    )
