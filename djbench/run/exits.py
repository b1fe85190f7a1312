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
        "a pair worse or an answer changed shape; --verify-only found a server that fails "
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
    """How a job ended, when not with 0: the one-line reason and its exit code."""

    message: str
    code: int


def verdict(message: str) -> Outcome:
    return Outcome(message, VERDICT)


def incomplete(message: str) -> Outcome:
    return Outcome(message, INCOMPLETE)


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
