"""runbench's jobs and options, declared once, as data.

Every option is one :class:`Flag`: its flag, type, help, the heading it is listed
under, the jobs (modes) that use it, what it needs beside it, and how a matrix cell's
child run is given it again (``cell``: spelled from the resolved
:class:`~djbench.plan.runplan.RunOptions`). From this table alone come the argparse
parser (:func:`djbench.run.cli.add_arguments`), the one generic check of which option
goes with which job (:func:`djbench.run.cli.check`), a matrix cell's argv
(:func:`djbench.run.cli.cell_argv`) and the option reference of the documentation
(:func:`djbench.run.cli.reference`). A new option is one entry here.
"""

from __future__ import annotations

from djbench.run.flags.deployments import WHAT_FLAGS
from djbench.run.flags.files import FILE_FLAGS
from djbench.run.flags.jobs import JOB_FLAGS
from djbench.run.flags.load import LOAD_FLAGS
from djbench.run.flags.remote_load import REMOTE_FLAGS
from djbench.run.flags.table import (
    ALL,
    JOBS,
    MATRIX_BUDGET,
    RUNS,
    TARGETABLE,
    TIMED,
    Flag,
    Job,
)

# In the order --help lists them.
FLAGS: tuple[Flag, ...] = (*JOB_FLAGS, *WHAT_FLAGS, *LOAD_FLAGS, *REMOTE_FLAGS, *FILE_FLAGS)
BY_DEST: dict[str, Flag] = {f.dest: f for f in FLAGS}

__all__ = [
    "ALL",
    "BY_DEST",
    "FLAGS",
    "JOBS",
    "MATRIX_BUDGET",
    "RUNS",
    "TARGETABLE",
    "TIMED",
    "Flag",
    "Job",
]
