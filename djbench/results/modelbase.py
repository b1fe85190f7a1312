"""The results model's base: every model forbids unknown keys, and a warning or a reason
is a :class:`Notice` (a code and its parameters; presenters turn it into words)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class Notice(Model):
    """A warning or a reason: a code and its parameters, turned into words by presenters."""

    code: str = Field(description="see djbench/reports/words.py for every code")
    params: dict[str, Any] = Field(
        default_factory=dict, description="numbers, strings, lists of them, or nested notices"
    )

    def model_post_init(self, context: Any) -> None:
        # Nested notices (the problems of a wrong answer) are notices again after a read.
        for key, value in self.params.items():
            if isinstance(value, list) and value and all(_is_notice(v) for v in value):
                self.params[key] = [Notice.model_validate(v) for v in value]


def _is_notice(value: Any) -> bool:
    return isinstance(value, Notice) or (
        isinstance(value, dict) and set(value) <= {"code", "params"} and "code" in value
    )


class Command(Model):
    """An exact command as started: argv, one shell line, the variables djbench set."""

    argv: list[str]
    shell: str
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str = ""
    config_file: str | None = Field(default=None, description="the deploy file it used")
    config_sha256: str | None = None
