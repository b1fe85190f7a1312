"""A report's section: what the HTML template and the Markdown writer both render."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.safestring import SafeString

from djbench.reports.words import pair_name
from djbench.verdicts.runs import Pair


@dataclass
class Section:
    id: str
    title: str
    intro: str = ""
    svg: SafeString | None = None
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    preformatted: list[str] = field(default_factory=list)


def label_of(pair: Pair, many_runs: bool) -> str:
    label = pair.label if pair.concurrency is None else f"{pair.label} c{pair.concurrency}"
    return f"{label} [{pair.run_tag}]" if many_runs else label


def row_name(pair: Pair, many_runs: bool) -> str:
    """A table row's server cell: the server with its variant and recycling (the proxy
    has its own column), and its run's tag when several runs are shown."""
    name = pair_name(pair.entry)
    return f"{name} [{pair.run_tag}]" if many_runs else name
