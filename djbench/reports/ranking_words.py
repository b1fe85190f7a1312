"""A ranking in words: a pair's figures as the guide names them, the file a winner starts
from, and why the winners are tied, in the figures of the test that found them tied
(djbench.verdicts.ranking computes all of it once)."""

from __future__ import annotations

from pathlib import Path

from djbench.verdicts import rules
from djbench.verdicts.ranking import Ranking, trial_range
from djbench.verdicts.runs import Pair


def deploy_file(pair: Pair) -> str:
    """The file a deployment starts from, as the run used it (Markdown): the project's
    own, relative to the project, or djbench's packaged one, which `benchinit --deploy`
    copies into the project; a server started from its command line alone has none."""
    command = pair.entry.command.get("server")
    if command is None or not command.config_file:
        return "its command line (the report's exact commands)"
    path = Path(command.config_file)
    if command.cwd and path.is_relative_to(command.cwd):
        return f"`{path.relative_to(command.cwd)}`"
    return f"djbench's `deploy/{path.name}` (`manage.py benchinit --deploy` copies it here)"


def figures(pair: Pair) -> str:
    rps = pair.median("rps") or 0
    low, high = trial_range(pair)
    p99 = pair.median("p99")
    pss = pair.memory("pss_peak")
    parts = [f"{rps:,.0f} req/s (trials {low:,.0f}-{high:,.0f})"]
    if p99 is not None:
        parts.append(f"p99 {p99:,.1f} ms")
    if pss is not None:
        parts.append(f"peak PSS {pss:,.1f} MiB")
    return ", ".join(parts)


def tie_reason(ranking: Ranking) -> str:
    """Why the winners are tied, in the figures of the test that chose them (the block
    design and the Benjamini-Hochberg family over the whole eligible ranking)."""
    ties = ranking.ties
    if ties and not all(t.testable for t in ties):
        n = min(len(w.series("rps")) for w in ranking.winners)
        return (
            f"with {n} trial(s) per server the paired test cannot separate them (it needs "
            f"{rules.MIN_ROUNDS} rounds): run more trials to separate them"
        )
    said = ", ".join(
        f"x{t.ratio:.3f}, "
        + (f"within {rules.THRESHOLD:.0%}" if t.verdict == "equivalent" else f"p = {t.p_value:.2g}")
        for t in ties
        if t.ratio is not None
    )
    held = min((t.level for t in ties if t.level is not None), default=ranking.level)
    return (
        f"the best is not shown better than them beyond {rules.THRESHOLD:.0%} at "
        f"{held:.2g} (Benjamini-Hochberg at {ranking.level:.2g} over the pairs of the "
        f"ranking; best/other {said}), so this run cannot separate them"
    )
