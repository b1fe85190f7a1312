"""Pure parts of the gate and the options: no server needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from djbench.measure.verify import Answer, problems, shape_of
from djbench.plan import scenarios
from djbench.plan.options import OptionError, cpu_split
from djbench.plan.scenarios import Expect
from djbench.reports.words import say


@pytest.mark.parametrize(
    ("raw", "available", "expected"),
    [
        ("auto", [0, 1], ((0,), (1,))),
        ("auto", [0, 1, 2, 3], ((0, 1), (2, 3))),
        ("auto", [0], ((), ())),
        ("none", [0, 1], ((), ())),
        ("1/0", [0, 1], ((1,), (0,))),
        ("0-1/2-3", [0, 1, 2, 3], ((0, 1), (2, 3))),
    ],
)
def test_cpu_split(raw: str, available: list[int], expected: tuple[tuple[int, ...], ...]) -> None:
    assert cpu_split(raw, available) == expected


def test_cpu_split_refuses_unavailable() -> None:
    with pytest.raises(OptionError, match=r"names CPU\(s\) \[5\] not available here"):
        cpu_split("0/5", [0, 1])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version = 2\n[[scenario]]\nname='a'\npath='/'\n", "version: must be 1, got 2"),
        ("version = 1\n", "s.toml: scenario: required key is missing"),
        ("version = 1\n[[scenario]]\npath='/'\n", "scenario #1: name: required key is missing"),
        (
            "version = 1\n[[scenario]]\nname='a'\npath='x'\n",
            "scenario #1 ('a'): path: must start with '/', got 'x'",
        ),
        (
            "version = 1\n[[scenario]]\nname='a'\npath='/'\nexpect={colour=1}\n",
            "scenario #1 ('a'): expect.colour: unknown key (a typo?)",
        ),
        (
            "version = 1\n[[scenario]]\nname='a'\nmetod='POST'\npath='/'\n",
            "scenario #1 ('a'): metod: unknown key (a typo?)",
        ),
        (
            "version = 1\n[[scenario]]\nname='a'\npath='/'\nbdoy='{}'\n",
            "scenario #1 ('a'): bdoy: unknown key (a typo?)",
        ),
        (
            "version = 1\n[[scenario]]\nname='a'\npath='/'\nexpect={keys='status'}\n",
            "scenario #1 ('a'): expect.keys: must be a valid list, got 'status'",
        ),
        (
            "version = 1\n[[scenario]]\nname='a'\npath='/'\nexpect={status='200'}\n",
            "scenario #1 ('a'): expect.status: must be a valid integer, got '200'",
        ),
        (
            "version = 1\n[scenario]\nname='a'\npath='/'\n",
            "scenario: must be a list of tables: write [[scenario]], not [scenario]",
        ),
        (
            "version = 1\n[[scenario]]\nname='a'\npath='/'\n"
            "[[scenario.checks]]\npath='/'\nexpect={json='obj'}\n",
            "scenario #1 ('a'): checks[0].expect.json: must be 'object' or 'list', got 'obj'",
        ),
        (
            "version = 1\n[[scenario]]\nname='a'\npath='/'\n[[scenario]]\nname='a'\npath='/'\n",
            "duplicate scenario name(s) a",
        ),
        ("version = = 1", "is not valid TOML"),
    ],
)
def test_bad_scenario_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(scenarios.ScenarioError) as caught:
        scenarios.load(path)
    assert message in str(caught.value)


def test_fingerprint_changes_with_the_definition(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text("version = 1\n[[scenario]]\nname='a'\npath='/x'\n")
    first = scenarios.load(path).scenarios[0].fingerprint()
    path.write_text("version = 1\n[[scenario]]\nname='a'\npath='/y'\n")
    assert scenarios.load(path).scenarios[0].fingerprint() != first


def test_default_scenarios_load() -> None:
    file = scenarios.load(Path(__file__).parent.parent / "loadtests" / "default.toml")
    assert len(file.scenarios) == 20
    assert {s.kind for s in file.scenarios} == {"http", "websocket"}


JSON = "application/json"


@pytest.mark.parametrize(
    ("expect", "answer", "found"),
    [
        (Expect(queries=1), Answer(200, JSON, b"{}", 1), []),
        (Expect(status=200), Answer(500, "text/html", b"oops", None), ["status 500, expected 200"]),
        (Expect(), Answer(200, JSON, b"", None), ["empty body"]),
        (
            Expect(content_type=JSON),
            Answer(200, "text/html", b"x", None),
            ["content type 'text/html', expected application/json"],
        ),
        (
            Expect(json="object", keys=("a",)),
            Answer(200, JSON, b'{"b": 1}', None),
            ["JSON object lacks a"],
        ),
        (Expect(json="list", length=2), Answer(200, JSON, b"[1]", None), ["list of 1, expected 2"]),
        (Expect(json="object"), Answer(200, JSON, b"nope", None), ["body is not JSON"]),
        (
            Expect(queries=2),
            Answer(200, JSON, b"{}", None),
            ["no query count (is djbench.middleware.QueryCountMiddleware installed?)"],
        ),
        (
            Expect(contains=("x",), not_contains=("<script>",)),
            Answer(200, "", b"<script>", None),
            ["body lacks 'x'", "body contains '<script>'"],
        ),
        (
            Expect(),
            Answer(0, "", b"", None, error="ConnectionRefusedError: refused"),
            ["ConnectionRefusedError: refused"],
        ),
    ],
)
def test_problems(expect: Expect, answer: Answer, found: list[str]) -> None:
    # The gate returns codes; the presenters' words for them are what users read.
    assert [say(p) for p in problems(expect, answer)] == found


def test_shape_ignores_values_not_structure() -> None:
    a = Answer(200, "application/json; charset=utf-8", b'{"id": 1, "items": [{"x": 1}]}', None)
    b = Answer(200, "application/json", b'{"id": 2, "items": [{"x": 5}, {"x": 6}]}', None)
    assert shape_of(a) == shape_of(b) == "200 application/json {id:int,items:[{x:int}]}"
