"""runbench's exit codes, one convention for every job (documented from this table in
--help and in docs/reference/exit-codes.md).

A server that failed its gate, was incompatible with a scenario or invalid in a
comparison is a finding of the run, shown in its answer: the job completed, exit 0. Exit
1 is for a verdict or a threshold the user asked to be held to (a matrix found a pair
worse); 2 for usage (before anything starts); 3 when the run could not complete; 130
when it was interrupted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from djbench.plan.inventory import Inventory
from djbench.results.model import Notice

DONE = 0
VERDICT = 1
USAGE = 2
INCOMPLETE = 3
INTERRUPTED = 130

TABLE: tuple[tuple[int, str, str], ...] = (
    (
        DONE,
        "the job completed and printed its answer",
        "servers that failed the gate, were incompatible or invalid are findings in it",
    ),
    (
        VERDICT,
        "a verdict or threshold failed",
        "a threshold of the scenario file missed (its interval beyond it); --matrix found "
        "a page costlier, its SQL changed or broken under the cost probe, a pair worse or "
        "an answer changed shape; benchcompare on two cost files, the same per page; "
        "--verify-only found a server that fails "
        "the gate; with --on-inconclusive fail, a question left open (a pair undecided, a "
        "threshold too close to call)",
    ),
    (USAGE, "usage error, before anything started", "a bad option, value or pairing"),
    (
        INCOMPLETE,
        "the run could not complete",
        "nothing could be measured; the results could not be saved (disk full)",
    ),
    (INTERRUPTED, "interrupted (Ctrl-C, SIGTERM)", "results so far are kept; --resume"),
)


@dataclass(frozen=True)
class Outcome:
    """How a job ended, when not with 0: why (a code the command words) and the exit
    code."""

    why: Notice
    code: int


def verdict(code: str, **params: Any) -> Outcome:
    return Outcome(Notice(code=code, params=params), VERDICT)


def incomplete(code: str, **params: Any) -> Outcome:
    return Outcome(Notice(code=code, params=params), INCOMPLETE)


@dataclass(frozen=True)
class Ended:
    """What a job leaves for the command to show (djbench.reports.endings): the results
    file it wrote (a run's or the verify gate's), a matrix's file, or --list's inventory;
    and how it ended (None: exit 0)."""

    results: Path | None = None
    run_dir: Path | None = None  # the run's logs
    matrix: Path | None = None
    inventory: Inventory | None = None
    outcome: Outcome | None = None


def help_text() -> str:
    """The table as --help's epilog (argparse keeps its lines with a raw formatter)."""
    return "exit codes:\n" + "\n".join(f"  {code:>3}  {what}: {e}" for code, what, e in TABLE)


def markdown() -> str:
    rows = [f"| {code} | {what} | {e} |" for code, what, e in TABLE]
    return "\n".join(
        [
            "# Exit codes",
            "",
            "Every `runbench` job follows one convention (`djbench/run/exits.py`, from",
            "which this page is generated: `python -m djbench.run.exits`).",
            "",
            "| code | meaning | for example |",
            "| --- | --- | --- |",
            *rows,
            "",
        ]
    )


if __name__ == "__main__":
    print(markdown(), end="")
