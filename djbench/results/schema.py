"""The published JSON Schema of results files, generated from the model.

    python -m djbench.results.schema            # print it
    python -m djbench.results.schema --write    # rewrite djbench/results/results.schema.json

The suite fails when the committed file differs from what the model generates, so the
schema a user validates against is always the one the code writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from djbench.results.model import SCHEMA_VERSION, RunDocument

PATH = Path(__file__).with_name("results.schema.json")


def generate() -> dict[str, Any]:
    schema = RunDocument.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://djbench.invalid/results.schema.v{SCHEMA_VERSION}.json",
        **schema,
    }


def text() -> str:
    return json.dumps(generate(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        PATH.write_text(text(), encoding="utf-8")
        print(f"wrote {PATH}")
    else:
        sys.stdout.write(text())
