"""What one scenario leaves in a server's memory for the next: PSS peak by position.

    python manage.py runbench --servers gunicorn-sync,uvicorn \
        --scenarios health-sync,ballast-sync --trials 6
    python loadtests/order_effect.py bench-results/RUN_ID.json

runbench runs a server's scenarios in one lifetime, in a shuffled order each round
(recorded per trial as `position`, 0 = first after the server started). For every pair
this prints the median PSS peak of its trials run first and of those run later, and
their difference: what earlier scenarios left behind (ballast-sync keeps 50 MiB).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from djbench.results.store import load


def main(path: Path) -> None:
    document = load(path)
    print(f"{document.run_id}: PSS peak MiB by position in the server's lifetime")
    for entry in document.results:
        first = [t.memory_mb.pss_peak for t in entry.trials if t.position == 0 and t.memory_mb]
        later = [t.memory_mb.pss_peak for t in entry.trials if t.position and t.memory_mb]
        if not first or not later:
            print(f"  {entry.label} {entry.scenario}: only one position ran")
            continue
        a, b = statistics.median(first), statistics.median(later)
        print(
            f"  {entry.label} {entry.scenario}: first {a:.1f} ({len(first)} trials), "
            f"later {b:.1f} ({len(later)}): {b - a:+.1f} MiB"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
