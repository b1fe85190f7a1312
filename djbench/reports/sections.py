"""A report's section: what the HTML template and the Markdown writer both render."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.safestring import SafeString


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
