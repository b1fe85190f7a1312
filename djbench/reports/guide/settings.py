"""The guide's sections on settings axes (--axis): each value against the first
(djbench.verdicts.axes judges them), said with the figures that decided it."""

from __future__ import annotations

from djbench.reports.guide.recommendation import Recommendation
from djbench.verdicts.axes import AxisValue, AxisVerdict, axis_verdicts
from djbench.verdicts.rules import THRESHOLD
from djbench.verdicts.runs import Run

# Settings axes the guide has a section for: the variables the sample project's settings
# read for it (a run measured them when its --axis named them), and what to do when it
# did not. A project's own variable is said only when its settings read it (the run
# recorded it: PlanRecord.connections.variable); never the sample's names.
AXIS_SECTIONS = {
    "db": (
        "Database connections (per interface)",
        ("DB_POOL", "DB_CONN_MAX_AGE"),
        "the connection settings (CONN_MAX_AGE, a pool)",
    ),
    "middleware": (
        "Middleware profile",
        ("MIDDLEWARE_PROFILE",),
        "the middleware",
    ),
}


def _not_measured(run: Run, key: str, what: str) -> str:
    text = (
        'Not measured in this run. `--axis "NAME=a,b"` sets an environment variable '
        f"the settings read, a value per run of every server: it measures {what} when "
        "your settings read them from one."
    )
    cost = run.plan.connections
    if key == "db" and cost is not None and cost.variable:
        text += f' Yours read CONN_MAX_AGE from `{cost.variable}`: `--axis "{cost.variable}=0,60"`.'
    return text


def _value_text(axis: str, base: str, v: AxisValue) -> str:
    tally = ", ".join(f"{n} {what}" for what, n in v.counts.items() if n)
    return (
        f"`{axis}={v.value}` gave {v.median_ratio:.2f}x the req/s of `{axis}={base}` "
        f"(median of {len(v.ratios)} pair(s), {v.ratios[0]:.2f}-{v.ratios[-1]:.2f}x; {tally})"
    )


def _decision_text(found: AxisVerdict) -> str:
    what, value = found.decision
    if what == "use":
        return f"use `{found.axis}={value}`"
    if what == "keep":
        return f"keep `{found.axis}={value}`"
    if what == "either":
        return f"no difference beyond {THRESHOLD:.0%}: either value"
    return (
        f"no verdict in this run (no difference beyond {THRESHOLD:.0%} could be shown either way)"
    )


def axis_lines(run: Run, axis: str) -> list[str]:
    """Per interface: what to do with `axis`, then each value against the first."""
    lines = []
    for found in axis_verdicts(run, axis):
        parts = [_value_text(axis, found.base, v) for v in found.values]
        lines.append(
            f"- **{found.interface.upper()}**: {_decision_text(found)}. " + "; ".join(parts) + "."
        )
    return lines


def axis_recommendations(run: Run) -> list[Recommendation]:
    found = []
    for key, (title, axes, what) in AXIS_SECTIONS.items():
        lines = [line for axis in axes for line in axis_lines(run, axis)]
        text = "\n".join(lines) if lines else _not_measured(run, key, what)
        found.append(Recommendation(key, title, text))
    return found
