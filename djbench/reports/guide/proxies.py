"""The guide's sections on what stands in front of the server: Caddy, TLS, HTTP/2
(djbench.verdicts.fronts judges each step against the one before it)."""

from __future__ import annotations

from djbench.reports.guide.recommendation import Recommendation
from djbench.verdicts.fronts import FrontStep, front_steps, proxy_costs
from djbench.verdicts.runs import Run

STEP_WORDS = {
    "tls_at_proxy": "TLS at Caddy",
    "h2_over_tls": "HTTP/2 instead of HTTP/1.1 over that TLS",
    "own_tls_h2": "the server's own TLS and HTTP/2 instead of plain HTTP/1.1",
    "own_h2_not_proxy": "the server's own TLS and HTTP/2 instead of Caddy's",
    "own_h2c_not_proxy": "the server's own HTTP/2 in clear (h2c) instead of Caddy's",
}
VERDICT_WORDS = {"better": "faster", "worse": "slower", "equivalent": "the same within 5%"}


def proxy_recommendation(run: Run) -> Recommendation:
    costs = proxy_costs(run)
    title = "Behind a reverse proxy (Caddy)"
    if not costs:
        return Recommendation(
            "proxy", title, "Not measured in this run: run with `--proxy none,caddy`."
        )
    lines = []
    for c in costs:
        memory = f"; Caddy itself peaked at {c.proxy_pss:,.1f} MiB PSS" if c.proxy_pss else ""
        lines.append(
            f"- {c.pair.server} on `{c.pair.scenario}`: {c.direct.median('rps') or 0:,.0f} req/s "
            f"direct, {c.pair.median('rps') or 0:,.0f} behind Caddy ({c.ratio:.2f}x){memory}."
        )
    best = costs[0].pair
    lines.insert(
        0,
        f"- Least affected by the proxy: **{best.server}** (its ratio is the "
        "highest below). Start from `deploy/Caddyfile`.",
    )
    return Recommendation("proxy", title, "\n".join(lines), [best.server])


def _versus(step: FrontStep) -> str:
    d = step.decision
    if d is None:
        return "too few rounds to test"
    low, high = d.ci or (float("nan"), float("nan"))
    verdict = VERDICT_WORDS.get(d.verdict, "no verdict")
    return f"paired by round x{d.ratio:.2f} [{low:.2f}-{high:.2f}], {verdict}"


def tls_recommendation(run: Run) -> Recommendation | None:
    """What TLS at the proxy costs, whether HTTP/2 helps over it, and whether a
    server's own HTTP/2 beats Caddy's; with Caddy's memory. None when the run has no
    TLS front (Caddy's or a server's own)."""
    steps = front_steps(run)
    if steps is None:
        return None
    lines = []
    for step in steps:
        memory = step.new.entry.proxy_memory_mb
        caddy = memory.pss_peak if memory else None
        said = f"; Caddy peaked at {caddy:,.1f} MiB PSS" if caddy else ""
        lines.append(
            f"- {step.server} on `{step.scenario}`, {STEP_WORDS[step.step]}: "
            f"{step.base.median('rps') or 0:,.0f} -> {step.new.median('rps') or 0:,.0f} "
            f"req/s ({_versus(step)}){said}."
        )
    if not lines:
        lines.append("- No server ran both with and without TLS here: nothing to compare.")
    lines.insert(
        0,
        "Each line holds one step against the one before it (same server, scenario, "
        "rounds): the medians, then the ratio of the rounds' pairs with its interval "
        '(it can differ from the ratio of the medians); "no verdict": the rounds could '
        "not tell. Start from "
        "`deploy/Caddyfile.tls` (put your domain in the site address in production).",
    )
    return Recommendation("proxy", "TLS and HTTP/2", "\n".join(lines))
