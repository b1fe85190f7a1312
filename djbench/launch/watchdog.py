"""runbench's watchdog: ``python -m djbench.launch.watchdog FOLDER RUNBENCH_PID``.

Started by runbench in a session of its own, with a pipe from runbench on its stdin.
It waits for that pipe to close, which happens when runbench ends however it ends
(normal exit, Ctrl-C, SIGKILL, an out-of-memory kill), then stops every process group
runbench recorded under FOLDER that is still running, and exits. Bounded: it waits on
nothing else, and reaping waits at most 5 s per group.
"""

from __future__ import annotations

import sys
from pathlib import Path

from djbench.launch.process import reap


def main(argv: list[str]) -> int:
    folder, owner = Path(argv[0]), int(argv[1])
    sys.stdin.buffer.read()  # returns at EOF: runbench is gone
    reap(folder, owner=owner)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
