"""A recommendation of the guide: one section, its text, and whom it names."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Recommendation:
    workload: str
    title: str
    text: str
    winners: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
