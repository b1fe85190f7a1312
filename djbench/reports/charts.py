"""Charts for the report, drawn with matplotlib and returned as inline SVG text.

Pure functions: data in, SVG out. The Agg backend is selected before pyplot is
imported, so no display is needed.
"""

from __future__ import annotations

import functools
import io
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


@functools.cache
def _pyplot() -> ModuleType:
    """pyplot on the Agg backend, imported on the first chart: matplotlib (with scipy,
    most of what runbench imports) is not paid by a command that draws nothing
    (`runbench --help`, a matrix cell's rounds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.fonttype": "path",
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "svg.hashsalt": "djbench",
        }
    )
    return plt


def _svg(fig: Figure) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    _pyplot().close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog: it is inlined in HTML


Span = tuple[float, float] | None


def _whiskers(values: list[float], spans: list[Span]) -> list[list[float]]:
    """matplotlib's xerr/yerr: each value's distance down and up to its interval's ends
    (none without an interval; never negative, as a median may sit outside a geometric
    mean's interval)."""
    return [
        [max(0.0, v - s[0]) if s else 0.0 for v, s in zip(values, spans, strict=True)],
        [max(0.0, s[1] - v) if s else 0.0 for v, s in zip(values, spans, strict=True)],
    ]


def hbar(
    title: str,
    labels: list[str],
    values: list[float],
    unit: str,
    spans: list[Span] | None = None,
) -> str:
    """Horizontal bars, largest first, each with its interval as a whisker where
    `spans` gives one."""
    height = max(1.6, 0.32 * len(labels) + 0.8)
    fig, ax = _pyplot().subplots(figsize=(7.5, height))
    ys = list(range(len(labels)))[::-1]
    xerr = None if spans is None else _whiskers(values, spans)
    ax.barh(ys, values, xerr=xerr, color="#4C72B0", ecolor="#333333", capsize=2)
    ax.set_yticks(ys, labels)
    ax.set_xlabel(unit)
    ax.set_title(title, loc="left")
    ends = values if xerr is None else [v + up for v, up in zip(values, xerr[1], strict=True)]
    for y, v, end in zip(ys, values, ends, strict=True):  # labels go past the whisker
        ax.text(end, y, f" {v:,.0f}" if v >= 10 else f" {v:,.2f}", va="center", fontsize=8)
    return _svg(fig)


def grouped(
    title: str,
    labels: list[str],
    series: dict[str, list[float]],
    unit: str,
    spans: dict[str, list[Span]] | None = None,
) -> str:
    """Grouped horizontal bars: one group per label, one bar per series, each with its
    interval as a whisker where `spans` gives one."""
    height = max(1.8, 0.22 * len(labels) * len(series) + 0.8)
    fig, ax = _pyplot().subplots(figsize=(7.5, height))
    n = len(series)
    width = 0.8 / n
    for i, (name, values) in enumerate(series.items()):
        ys = [
            len(labels) - 1 - j + (n - 1 - i) * width - 0.4 + width / 2 for j in range(len(labels))
        ]
        ranges = (spans or {}).get(name)
        xerr = None if ranges is None else _whiskers(values, ranges)
        ax.barh(ys, values, height=width, label=name, xerr=xerr, ecolor="#333333", capsize=1.5)
    ax.set_yticks(list(range(len(labels)))[::-1], labels)
    ax.set_xlabel(unit)
    ax.set_title(title, loc="left")
    ax.legend(loc="lower right", fontsize=8)
    return _svg(fig)


def lines(title: str, xs: list[int], series: dict[str, list[float | None]], unit: str) -> str:
    """One line per series against concurrency (log scale of latency)."""
    fig, ax = _pyplot().subplots(figsize=(7.5, 3.2))
    for name, values in series.items():
        points = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_yscale("log")
    ax.set_xlabel("concurrency (connections)")
    ax.set_ylabel(unit)
    ax.set_title(title, loc="left")
    ax.legend(fontsize=7, ncols=2)
    return _svg(fig)


def capacity_curves(
    title: str,
    curves: dict[str, list[tuple[float, float]]],
    knees: dict[str, float],
    slo_ms: float,
) -> str:
    """p99 against offered rate, one line per server (steps sorted by rate), the SLO as
    a dashed line and each server's capacity (the knee) as a marker on it."""
    fig, ax = _pyplot().subplots(figsize=(7.5, 3.6))
    for name, points in curves.items():
        points = sorted(points)
        (line,) = ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=name)
        if name in knees:
            ax.plot([knees[name]], [slo_ms], marker="v", markersize=9, color=line.get_color())
    ax.axhline(slo_ms, linestyle="--", color="#888888", linewidth=1)
    ax.text(ax.get_xlim()[0], slo_ms, f" p99 target {slo_ms:g} ms", va="bottom", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("offered req/s (open loop)")
    ax.set_ylabel("p99 ms")
    ax.set_title(title, loc="left")
    ax.legend(fontsize=7, ncols=2)
    return _svg(fig)


def sweep_curves(title: str, curves: dict[str, list[tuple[float, float]]]) -> str:
    """req/s against concurrency (log 2), one line per server."""
    fig, ax = _pyplot().subplots(figsize=(7.5, 3.4))
    for name, points in curves.items():
        points = sorted(points)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrency (connections, closed loop)")
    ax.set_ylabel("req/s")
    ax.set_title(title, loc="left")
    ax.legend(fontsize=7, ncols=2)
    return _svg(fig)


def timeline(
    title: str,
    memory: list[tuple[float, float]],
    rps: list[tuple[float, float]],
    p99: list[tuple[float, float]],
    restarts: list[float],
) -> str:
    """A soak: PSS, req/s and p99 against time, worker restarts as vertical lines."""
    fig, axes = _pyplot().subplots(3, 1, figsize=(7.5, 5.2), sharex=True)
    panels = [
        (axes[0], memory, "PSS MiB", "#4C72B0"),
        (axes[1], rps, "req/s", "#55A868"),
        (axes[2], p99, "p99 ms", "#C44E52"),
    ]
    for ax, points, unit, color in panels:
        if points:
            ax.plot([t for t, _ in points], [v for _, v in points], color=color, linewidth=1)
        for t in restarts:
            ax.axvline(t, color="#888888", linewidth=0.6, linestyle=":")
        ax.set_ylabel(unit)
    axes[0].set_title(
        title + (f" ({len(restarts)} worker restarts: dotted)" if restarts else ""), loc="left"
    )
    axes[2].set_xlabel("seconds into the soak")
    return _svg(fig)


@dataclass(frozen=True)
class Spot:
    """A deployment's point on a trade-off: each coordinate with its interval (None:
    one trial, no interval)."""

    x: float
    y: float
    x_range: tuple[float, float] | None = None
    y_range: tuple[float, float] | None = None


Colour = tuple[float, float, float, float]  # RGBA, as a colormap gives it
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")


def _style(index: int, count: int) -> tuple[Colour, str]:
    """A deployment's colour and marker, told apart up to twenty and beyond."""
    import matplotlib

    palette = matplotlib.colormaps["tab10" if count <= 10 else "tab20"]
    colour = palette(index % palette.N)
    return colour, MARKERS[index % len(MARKERS)]


def _error(value: float, span: Span) -> list[list[float]] | None:
    return None if span is None else _whiskers([value], [span])


def _scatter_panel(
    ax: Axes, spots: dict[str, Spot], efficient: set[str], styles: dict[str, tuple[Colour, str]]
) -> None:
    for name, spot in spots.items():
        colour, marker = styles[name]
        ax.errorbar(
            [spot.x],
            [spot.y],
            xerr=_error(spot.x, spot.x_range),
            yerr=_error(spot.y, spot.y_range),
            marker=marker,
            markersize=7,
            color=colour,
            markerfacecolor=colour if name in efficient else "white",
            ecolor=colour,
            elinewidth=0.9,
            capsize=2,
            linestyle="none",
        )
    front = sorted((spots[n].x, spots[n].y) for n in efficient if n in spots)
    if len(front) > 1:
        ax.plot([p[0] for p in front], [p[1] for p in front], color="#999999", linewidth=0.8)


def _log_y(ax: Axes) -> None:
    """A log scale labelled in plain figures (1, 2, 5 a decade), no minor labels."""
    from matplotlib import ticker

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())


def scatters(title: str, panels: list[tuple[dict[str, Spot], set[str], tuple[str, str]]]) -> str:
    """Side by side, one panel per trade-off: a point per deployment (x: req/s, y: a
    cost) with its intervals as error bars on both axes; the efficient ones (no other
    both faster and cheaper) filled and joined. The deployments are named in one legend
    beside the panels (a colour and marker each), never by labels on the points, which
    overlap as soon as two deployments are close."""
    names = list(dict.fromkeys(n for spots, _, _ in panels for n in spots))
    styles = {n: _style(i, len(names)) for i, n in enumerate(names)}
    width = 8.5 if len(panels) == 1 else 12
    fig, axes = _pyplot().subplots(
        1, len(panels), figsize=(width, max(3.6, 0.2 * len(names) + 1)), layout="constrained"
    )
    for ax, (spots, efficient, labels) in zip(
        [axes] if len(panels) == 1 else list(axes), panels, strict=True
    ):
        _scatter_panel(ax, spots, efficient, styles)
        ys = [s.y for s in spots.values() if s.y > 0]
        if ys and max(ys) > 10 * min(ys):  # one slow deployment would flatten the rest
            _log_y(ax)
        ax.set_xlabel(labels[0])
        ax.set_ylabel(labels[1])
    handles = [
        _pyplot().Line2D([], [], marker=styles[n][1], color=styles[n][0], linestyle="none")
        for n in names
    ]
    fig.legend(handles, names, loc="outside right upper", fontsize=7, frameon=False)
    fig.suptitle(title + " (95% intervals; filled: efficient)", x=0.02, ha="left", fontsize=10)
    return _svg(fig)
