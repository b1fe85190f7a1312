"""Memory under load (issue 22 item 3): the window's PSS peak includes a reading taken
while the load runs, not only at the window's edges, where (for wrk and the WebSocket
loads) no load is running. A process that holds 64 MiB only in the window's middle is
the stand-in for a server that allocates per connection and frees when the load stops."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from djbench.launch.process import ProcessTree, running
from djbench.measure.sampler import TreeSampler, summarise

HOLDS = """
import time
time.sleep(0.6)
block = bytearray(64 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1  # touched: resident, so in PSS
time.sleep(1.0)
del block  # a large bytearray is unmapped at once
time.sleep(60)
"""


def peak_with(tmp_path: Path, middle: float | None) -> tuple[float, float]:
    """(PSS at the window's opening, PSS peak over the window) in MiB."""
    tree = ProcessTree(
        name="holder",
        argv=[sys.executable, "-c", HOLDS],
        env={},
        cwd=tmp_path,
        log_path=tmp_path / f"holder-{middle}.log",
    )
    with running(tree):
        time.sleep(0.1)
        sampler = TreeSampler(tree, 0.2, full_after=middle).start()
        time.sleep(2.2)
        samples = sampler.stop()
    memory = summarise(samples)
    assert memory is not None and samples[0].pss is not None
    return samples[0].pss / 2**20, memory.pss_peak


def test_the_peak_is_read_while_the_load_runs(tmp_path: Path) -> None:
    opening, peak = peak_with(tmp_path, middle=1.1)
    assert peak - opening > 50  # the middle reading saw the 64 MiB


def test_edges_alone_miss_what_the_load_held(tmp_path: Path) -> None:
    opening, peak = peak_with(tmp_path, middle=None)
    assert peak - opening < 10  # what runbench reported before: the edges only
