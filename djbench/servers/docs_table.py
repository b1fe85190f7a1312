"""The registry as the table of docs/servers.md, generated (tests/test_servers.py fails
when the page holds another):

    python -m djbench.servers.docs_table            # print it
    python -m djbench.servers.docs_table --write    # rewrite it in docs/servers.md
"""

from __future__ import annotations

import sys
from pathlib import Path

from djbench.servers import SERVERS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "servers.md"
BEGIN = "<!-- the registry's table: python -m djbench.servers.docs_table --write -->"
END = "<!-- end of the registry's table -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown() -> str:
    lines = [
        "| name | family | interface | WebSocket | started from | HTTP/2 | graceful reload "
        "| worker recycling | process model | facts checked with |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for spec in SERVERS.values():
        f = spec.features
        cells = [
            f"`{spec.name}`",
            spec.family.name,
            spec.interface.upper(),
            "yes" if spec.websocket else "no",
            f"`deploy/{spec.deploy_file}`: {spec.summary}",
            f.http2,
            f.reload,
            f.recycle,
            f.process_model,
            f.checked_with,
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def page(text: str) -> str:
    """The docs page with its table between the markers replaced."""
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{markdown()}{END}{tail}"


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        PAGE.write_text(page(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote {PAGE}")
    else:
        sys.stdout.write(markdown())
