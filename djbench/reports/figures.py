"""How a figure is printed: the digits a number keeps, the same in the console, the
report and the CI outputs."""

from __future__ import annotations


def number(value: float | None, digits: int = 0) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def rate(value: float) -> str:
    """A req/s figure with the digits that tell its interval's ends apart: whole numbers
    from 100 up, then one decimal, then two below 10 (a slow page's 20 req/s
    [19.9-20.1], printed whole, read as an interval of no width: [20-20])."""
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"
