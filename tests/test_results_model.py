"""The results model: round trip, published schema, schema-1 files, codes and escaping."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest

from djbench.reports import guide, report
from djbench.reports.words import md_cell, say
from djbench.results import migrate, schema, store
from djbench.results.model import DriverFigures, Notice, RunDocument
from djbench.verdicts.runs import load_run
from tests.resultfiles import UNDERSERVED, document, entry, write

FIXTURES = Path(__file__).parent / "fixtures" / "results"
ROOT = Path(__file__).resolve().parent.parent


def sample() -> RunDocument:
    return document(
        "rt",
        [
            entry("uwsgi", "movies-sync", [900.0, 910.0, 905.0], warnings=[UNDERSERVED]),
            entry("gunicorn-gevent", "movies-sync", [], status="incompatible", reason="x"),
        ],
    )


def test_round_trip_gives_the_same_object(tmp_path: Path) -> None:
    original = sample()
    path = tmp_path / "rt.json"
    store.write_atomic(path, original)
    again = store.load(path)
    assert again == original
    assert path.stat().st_mode & 0o044 == 0o044  # readable by others, like any file written
    assert again.results[0].summary.warnings == [UNDERSERVED]
    assert again.results[0].summary.rps.median == 905.0


def test_committed_schema_is_what_the_model_generates() -> None:
    # After changing the model: python -m djbench.results.schema --write
    assert schema.PATH.read_text(encoding="utf-8") == schema.text()


def validator() -> jsonschema.protocols.Validator:
    published = json.loads(schema.PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(published)
    cls.check_schema(published)
    return cls(published)  # type: ignore[no-any-return]


def _v3_quick() -> dict[str, object]:
    """v2-quick.json (written by `runbench --quick`: gunicorn-sync and uvicorn, three
    scenarios, one of them incompatible), as this djbench writes it (schema 3)."""
    data = json.loads((FIXTURES / "v2-quick.json").read_text())
    return json.loads(store.dump(store.parse(data, "v2-quick.json")))


def test_a_real_runs_file_validates_against_the_published_schema() -> None:
    # The suite's live runs check their own files too.
    data = _v3_quick()
    assert data["schema_version"] == 3
    validator().validate(data)
    assert store.parse(data, "v2-quick.json").kind == "benchmark"


def test_a_schema_2_trial_keeps_its_driver_figures() -> None:
    data = json.loads((FIXTURES / "v2-quick.json").read_text())
    extra = data["results"][0]["trials"][0]["extra"]
    trial = store.parse(data, "v2-quick.json").results[0].trials[0]
    known = {k: v for k, v in extra.items() if k in DriverFigures.model_fields}
    assert known and trial.driver_figures.model_dump(exclude_none=True) == known


def test_a_file_that_breaks_the_schema_is_refused_by_both(tmp_path: Path) -> None:
    data: dict = _v3_quick()  # type: ignore[type-arg]
    data["results"][0]["trials"][0]["rps"] = "fast"
    with pytest.raises(jsonschema.ValidationError):
        validator().validate(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(store.ResultsError, match=r"results\.0\.trials\.0\.rps"):
        store.load(bad)


def test_a_schema_1_file_from_before_the_model_still_loads() -> None:
    run = load_run(FIXTURES / "v1-quick.json")
    assert run.document.schema_version == 3  # migrated in memory; the file is untouched
    ok = [p for p in run.pairs if p.ok]
    assert {p.server for p in ok} == {"gunicorn-sync", "uvicorn"}
    assert all(p.median("rps") for p in ok)
    ws = next(p for p in run.pairs if p.status == "incompatible")
    assert say(ws.reason) == "WebSocket needs an ASGI server; this one is WSGI"
    # Every presenter reads it.
    assert "gunicorn-sync" in report.markdown([run])
    assert "Recommendations by workload" in guide.markdown(run)


def test_schema_1_warnings_become_codes_again() -> None:
    text = (
        "the server served about 17.0 of 32 connections at a time (Little's law); the "
        "others waited unserved, and their waiting is not in the latency percentiles"
    )
    assert migrate.warning(text) == {
        "code": "underserved",
        "params": {"in_flight": 17.0, "concurrency": 32},
    }
    assert (
        migrate.warning("load driver used 95% of its CPUs: the client may be the bottleneck")[
            "code"
        ]
        == "driver_busy"
    )
    assert migrate.warning("something new") == {
        "code": "legacy",
        "params": {"text": "something new"},
    }
    # ... and say the same words as before.
    assert say(Notice.model_validate(migrate.warning(text))) == text


def test_a_newer_schema_is_refused_with_a_sentence(tmp_path: Path) -> None:
    path = tmp_path / "future.json"
    path.write_text('{"schema_version": 4, "kind": "benchmark", "results": []}')
    with pytest.raises(store.ResultsError) as caught:
        store.load(path)
    assert str(caught.value) == (
        f"{path} has schema version 4; this djbench reads versions 1, 2, 3 (a newer djbench "
        "wrote it?)"
    )


def test_an_unknown_code_is_shown_as_code_and_parameters() -> None:
    assert say(Notice(code="from_the_future", params={"n": 1})) == "from_the_future {'n': 1}"
    assert say(None) == ""


HOSTILE = "status 500 <script>alert(1)</script> | a|b"


class Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


def test_run_text_is_escaped_in_html_and_markdown(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "esc",
        [
            entry("uwsgi", "movies-sync", [900.0, 910.0, 905.0]),
            entry("uvicorn", "movies-sync", [], status="failed", reason=HOSTILE),
        ],
    )
    run = load_run(path)
    for page in (report.html([run]), report.markdown_to_html_page("g", guide.markdown(run))):
        parser = Collect()
        parser.feed(page)
        assert "script" not in parser.tags
        assert "&lt;script&gt;" in page
    failed_pairs = report.markdown([run]).split("## Failed, invalid")[1]
    table_row = next(line for line in failed_pairs.splitlines() if line.startswith("| uvicorn |"))
    # Six columns in the failed-pairs table: the '|' in the reason did not add any.
    cells = re.split(r"(?<!\\)\|", table_row.strip())[1:-1]
    assert len(cells) == 6, cells
    # Tags are code, never HTML entities: the Markdown reads as the server wrote it.
    assert cells[-1].strip() == "status 500 `<script>`alert(1)`</script>` \\| a\\|b"
    assert md_cell("a|b\nc") == "a\\|b c"
    for text in (guide.markdown(run), report.markdown([run])):
        assert not re.search(r"&(lt|gt|amp|quot|#\d+);", text)
        prose = re.sub(r"```.*?```", "", text, flags=re.S).replace("`<script>`", "")
        assert "<script>" not in prose  # only in code: a span, or a block (the answer)
