"""The scenario file's reference page, written from its models (djbench.plan.scenario_file):
every key with its type, default, meaning and an example.

``python -m djbench.plan.scenario_reference > docs/reference/scenarios.md`` writes it;
tests/test_docs.py fails when the page differs from this output. The types are said in
TOML's words from the annotations (a few lines: pydantic's JSON schema would need the
same translation, and its `$ref`s resolved).
"""

from __future__ import annotations

import json
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from djbench.plan.scenario_file import (
    CheckKeys,
    DeploymentKeys,
    ExpectKeys,
    FileKeys,
    ScenarioKeys,
    ThresholdKeys,
)

REFERENCE_COMMAND = "python -m djbench.plan.scenario_reference > docs/reference/scenarios.md"

# Each table of the file: its heading as TOML writes it, and its model.
TABLES: tuple[tuple[str, type[BaseModel]], ...] = (
    ("the file (top level)", FileKeys),
    ("[[scenario]]", ScenarioKeys),
    ("[scenario.expect] (and a check's expect)", ExpectKeys),
    ("[[scenario.checks]]", CheckKeys),
    ("[thresholds] and [scenario.thresholds]", ThresholdKeys),
    ("[[deployment]]", DeploymentKeys),
)

EXAMPLE = """\
version = 1
health_path = "/health/"

[profiles]
default = ["home", "movie", "search"]
quick = ["home"]

[thresholds]
p99_ms = 500

[[scenario]]
name = "home"
path = "/"
expect = { status = 200, content_type = "text/html", queries = [3, 5] }

[[scenario]]
name = "movie"
path = "/movies/1/"
paths = ["/movies/2/", "/movies/3/"]
expect = { status = 200, contains = ["Films</title>"], queries = 2 }
thresholds = { p99_ms = 250 }
[[scenario.checks]]
label = "an unknown movie is a 404"
path = "/movies/999999/"
expect = { status = 404 }

[[scenario]]
name = "search"
method = "POST"
path = "/api/search"
body = { q = "night" }
csrf = true
expect = { status = 200, json = "object", keys = ["results"] }

[[scenario]]
name = "traffic"
mix = { home = 60, movie = 30, search = 10 }
"""


def type_words(annotation: Any) -> str:
    """A key's type in TOML's words: 'string', 'list of string', 'one of `a`, `b`'."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return type_words(args[0])
    if origin in (Union, types.UnionType):
        return " or ".join(type_words(a) for a in args if a is not type(None))
    if origin is Literal:
        return "one of " + ", ".join(f"`{toml_value(a)}`" for a in args)
    if origin is list:
        return f"list of {type_words(args[0])}" if args else "list"
    if origin is dict:
        return f"table of {type_words(args[1])}" if args else "table"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return names.get(annotation, "any value")


def toml_value(value: Any) -> str:
    """A value as TOML writes it inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    return str(value)


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None or value is PydanticUndefined:
        return "none"
    if isinstance(value, BaseModel):
        return "none set"
    return f"`{toml_value(value)}`"


def _example(key: str, field: Any) -> str:
    if field.examples:
        return f"`{key} = {toml_value(field.examples[0])}`"
    annotation = get_args(field.annotation)[0] if get_args(field.annotation) else None
    if get_origin(field.annotation) is Literal and annotation is not None:
        return f"`{key} = {toml_value(annotation)}`"
    return ""


def table(model: type[BaseModel]) -> list[str]:
    """A model's keys as a Markdown table."""
    rows = ["| key | type | default | meaning | example |", "| --- | --- | --- | --- | --- |"]
    own = set(model.__annotations__)  # a table's own keys first, then those it shares
    fields = sorted(model.model_fields.items(), key=lambda item: item[0] not in own)
    for name, field in fields:
        key = field.alias or name
        cells = [
            f"`{key}`",
            type_words(field.annotation),
            _default(field),
            (field.description or "").replace("|", "\\|"),
            _example(key, field).replace("|", "\\|"),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def reference() -> str:
    out = [
        "# Scenario files",
        "",
        "Generated from `djbench/plan/scenario_file.py`, the models every scenario file is",
        f"validated against: `{REFERENCE_COMMAND}`.",
        "A key that is not listed here, or a value of another type, is a one-line error",
        "naming the file, the scenario and the key, before anything starts.",
        "`python manage.py benchinit` writes a file for your project; edit it, or write",
        "one by hand:",
        "",
        "```toml",
        EXAMPLE.rstrip(),
        "```",
    ]
    for heading, model in TABLES:
        intro = " ".join((model.__doc__ or "").split())
        out += ["", f"## {heading}", "", intro, "", *table(model)]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(reference(), end="")
