"""The guide's sections on what stands in front of the server: Caddy, TLS, HTTP/2.

Each step is judged from the one before it (same server, scenario and rounds), by the
decision engine paired by round.
"""

from __future__ import annotations

from djbench.reports.compare import estimate
from djbench.reports.ranking import TIE_ALPHA
from djbench.reports.recommendation import Recommendation
from djbench.verdicts.engine import decide
from djbench.verdicts.runs import Pair, Run


def proxy_recommendation(run: Run) -> Recommendation:
    direct = {
        (p.server, p.entry.variant_label, p.scenario, p.concurrency): p
        for p in run.pairs
        if p.front == "none" and p.ok
    }
    rows = []
    for pair in run.pairs:
        if pair.front != "caddy" or not pair.ok:  # TLS and HTTP/2: tls_recommendation
            continue
        base = direct.get((pair.server, pair.entry.variant_label, pair.scenario, pair.concurrency))
        if base is None:
            continue
        ratio = (pair.median("rps") or 0) / (base.median("rps") or 1)
        caddy = pair.entry.proxy_memory_mb.pss_peak if pair.entry.proxy_memory_mb else None
        rows.append((pair, base, ratio, caddy))
    if not rows:
        return Recommendation(
            "proxy",
            "Behind a reverse proxy (Caddy)",
            "Not measured in this run: run with `--proxy none,caddy`.",
        )
    rows.sort(key=lambda r: -r[2])
    lines = []
    for pair, base, ratio, caddy in rows:
        memory = f"; Caddy itself peaked at {caddy:,.1f} MiB PSS" if caddy else ""
        lines.append(
            f"- {pair.server} on `{pair.scenario}`: {base.median('rps') or 0:,.0f} req/s "
            f"direct, {pair.median('rps') or 0:,.0f} behind Caddy ({ratio:.2f}x){memory}."
        )
    best = rows[0][0]
    lines.insert(
        0,
        f"- Least affected by the proxy: **{best.server}** (its ratio is the "
        "highest below). Start from `deploy/Caddyfile`.",
    )
    return Recommendation(
        "proxy", "Behind a reverse proxy (Caddy)", "\n".join(lines), [best.server]
    )


# TLS and HTTP/2 (issue 27): each step from the one before it, same server and scenario.
FRONT_STEPS = (
    ("caddy-tls", "caddy", "TLS at Caddy"),
    ("caddy-tls/h2", "caddy-tls", "HTTP/2 instead of HTTP/1.1 over that TLS"),
    ("none/h2", "none", "the server's own TLS and HTTP/2 instead of plain HTTP/1.1"),
    ("none/h2", "caddy-tls/h2", "the server's own TLS and HTTP/2 instead of Caddy's"),
    ("none/h2c", "caddy-tls/h2", "the server's own HTTP/2 in clear (h2c) instead of Caddy's"),
)


def _versus(new: Pair, base: Pair) -> str:
    """NEW/BASE req/s with the engine's verdict, paired by round at TIE_ALPHA."""
    e = estimate("rps", base, new, paired=True)
    if e is None:
        return "too few rounds to test"
    [d] = decide.judge([e], +1, TIE_ALPHA)
    low, high = d.ci or (float("nan"), float("nan"))
    words = {"better": "faster", "worse": "slower", "equivalent": "the same within 5%"}
    verdict = words.get(d.verdict, "no verdict")
    return f"paired by round x{d.ratio:.2f} [{low:.2f}-{high:.2f}], {verdict}"


def tls_recommendation(run: Run) -> Recommendation | None:
    """What TLS at the proxy costs, whether HTTP/2 helps over it, and whether a
    server's own HTTP/2 beats Caddy's; with Caddy's memory. None when the run has no
    TLS front (Caddy's or a server's own)."""
    fronts: dict[tuple[str, str, str, int | None], dict[str, Pair]] = {}
    for p in run.pairs:
        if p.ok:
            key = (p.server, p.entry.variant_label, p.scenario, p.concurrency)
            fronts.setdefault(key, {})[p.front] = p
    if not any(f in by for by in fronts.values() for f in ("caddy-tls", "none/h2")):
        return None
    lines = []
    for (server, _, scenario, _), by in sorted(fronts.items()):
        for new, base, what in FRONT_STEPS:
            if new in by and base in by:
                n, b = by[new], by[base]
                caddy = n.entry.proxy_memory_mb.pss_peak if n.entry.proxy_memory_mb else None
                memory = f"; Caddy peaked at {caddy:,.1f} MiB PSS" if caddy else ""
                lines.append(
                    f"- {server} on `{scenario}`, {what}: {b.median('rps') or 0:,.0f} -> "
                    f"{n.median('rps') or 0:,.0f} req/s ({_versus(n, b)}){memory}."
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
