"""The guide's sections on settings axes (--axis): each value against the first, same
everything else, judged by the decision engine with Benjamini-Hochberg over the groups."""

from __future__ import annotations

import statistics

from djbench.reports.compare import estimate
from djbench.reports.recommendation import Recommendation
from djbench.verdicts.engine import decide
from djbench.verdicts.runs import Pair, Run

# Settings axes the guide has a section for, and the --axis that measures them.
AXIS_SECTIONS = {
    "db": (
        "Database connections (per interface)",
        ("DB_POOL", "DB_CONN_MAX_AGE"),
        '--axis "DB_POOL=0,1;DB_CONN_MAX_AGE=0,60" --database postgres',
    ),
    "middleware": (
        "Middleware profile",
        ("MIDDLEWARE_PROFILE",),
        '--axis "MIDDLEWARE_PROFILE=default,lean"',
    ),
}


def _axis_groups(run: Run, axis: str, interface: str) -> list[dict[str, Pair]]:
    """The pairs that differ only in `axis`: per (server, proxy, scenario, concurrency,
    other axes' values), each value's pair."""
    groups: dict[tuple[object, ...], dict[str, Pair]] = {}
    for p in run.pairs:
        if not p.ok or p.entry.interface != interface or axis not in p.variant:
            continue
        others = tuple(sorted((k, v) for k, v in p.variant.items() if k != axis))
        key = (p.server, p.proxy, p.scenario, p.concurrency, others)
        groups.setdefault(key, {})[p.variant[axis]] = p
    return list(groups.values())


def _axis_value(
    groups: list[dict[str, Pair]], axis: str, base: str, value: str
) -> tuple[str, str] | None:
    """(verdict, text) of one value against the base over every group: the decision
    engine per group (paired by round: the values ran in the same rounds), with
    Benjamini-Hochberg over the groups."""
    both = [(g[base], g[value]) for g in groups if base in g and value in g]
    both = [(b, o) for b, o in both if b.median("rps") and o.median("rps")]
    if not both:
        return None
    decisions = decide.judge(
        [estimate("rps", b, o, paired=True) for b, o in both], +1, decide.ALPHA
    )
    found = sorted((o.median("rps") or 0) / (b.median("rps") or 1) for b, o in both)
    counts = {v: sum(d.verdict == v for d in decisions) for v in decide.DECIDED}
    counts["inconclusive"] = len(decisions) - sum(counts.values())
    if counts["better"] and not counts["worse"]:
        verdict = "better"
    elif counts["worse"] and not counts["better"]:
        verdict = "worse"
    elif counts["equivalent"] == len(decisions):
        verdict = "equivalent"
    else:
        verdict = "inconclusive"
    tally = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    return verdict, (
        f"`{axis}={value}` gave {statistics.median(found):.2f}x the req/s of `{axis}={base}` "
        f"(median of "
        f"{len(found)} pair(s), {found[0]:.2f}-{found[-1]:.2f}x; {tally})"
    )


def axis_lines(run: Run, axis: str) -> list[str]:
    """Per interface: each value of `axis` against its first value, same everything else,
    judged by the decision engine: "use" only for a value significantly better than the
    first beyond the threshold on some pair and worse on none."""
    values = run.plan.axes.get(axis, [])
    if len(values) < 2:
        return []
    base = values[0]
    lines = []
    for interface in ("wsgi", "asgi"):
        groups = _axis_groups(run, axis, interface)
        judged = {
            v: found
            for v in values[1:]
            if (found := _axis_value(groups, axis, base, v)) is not None
        }
        if not judged:
            continue
        better = [v for v, (verdict, _) in judged.items() if verdict == "better"]
        if better:
            verdict = f"use `{axis}={better[0]}`"
        elif all(v == "worse" for v, _ in judged.values()):
            verdict = f"keep `{axis}={base}`"
        elif all(v == "equivalent" for v, _ in judged.values()):
            verdict = f"no difference beyond {decide.THRESHOLD:.0%}: either value"
        else:
            verdict = (
                f"no verdict in this run (no difference beyond {decide.THRESHOLD:.0%} could be "
                "shown either way)"
            )
        parts = [text for _, text in judged.values()]
        lines.append(f"- **{interface.upper()}**: {verdict}. " + "; ".join(parts) + ".")
    return lines


def axis_recommendations(run: Run) -> list[Recommendation]:
    found = []
    for key, (title, axes, how) in AXIS_SECTIONS.items():
        lines = [line for axis in axes for line in axis_lines(run, axis)]
        text = "\n".join(lines) if lines else f"Not measured in this run: run with {how}."
        found.append(Recommendation(key, title, text))
    return found
