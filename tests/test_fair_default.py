"""The default comparison is fair (issue 35): every installed server's default layout
serves every connection of the default concurrency, on real servers with short windows.
uWSGI with its http11-socket once answered 1 of 32 keep-alive connections: a layout
djbench chose, ranked as if it were uWSGI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from djbench.launch.servers import SERVERS
from djbench.plan.runplan import PROFILES
from djbench.results import store
from djbench.results.analysis import UNDERSERVED

pytestmark = pytest.mark.servers


def test_every_default_layout_serves_every_connection(live_database: str, tmp_path: Path) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the layouts are the servers' own: the SQLite pass only")
    installed = [s.name for s in SERVERS.values() if not s.missing()]
    [concurrency] = PROFILES["default"]["concurrency"]
    out = StringIO()
    ci = tmp_path / "ci"
    ci.mkdir()
    call_command(
        "runbench", "--servers", ",".join(installed), "--scenarios", "health-sync",
        "--trials", "1", "--duration", "0.5", "--warmup", "0.2", "--ws-idle", "0",
        "--no-setup", "--output", str(tmp_path), "--summary", str(ci / "summary.md"),
        "--junit", str(ci / "junit.xml"), "--bmf", str(ci / "bmf.json"), stdout=out,
    )  # fmt: skip
    [path] = tmp_path.glob("*.json")
    document = store.load(path)
    assert {e.server for e in document.results} == set(installed)
    for entry in document.results:
        assert entry.status == "ok", (entry.label, entry.reason)
        assert entry.concurrency == concurrency
        [trial] = entry.trials
        codes = [w.code for w in trial.warnings] + [w.code for w in entry.summary.warnings]
        assert UNDERSERVED not in codes, (entry.label, trial.warnings)
        assert trial.in_flight_mean is not None
        assert trial.in_flight_mean >= 0.9 * concurrency, (entry.label, trial.in_flight_mean)
    assert "Not recommended:" not in out.getvalue(), out.getvalue()[-3000:]
    # The files CI reads, written at the end of the same run (issue 39 item 2).
    for name in ("Summary", "JUnit", "BMF"):
        assert f"{name}: {ci}" in out.getvalue()
    cases = ET.parse(ci / "junit.xml").getroot().findall("testsuite/testcase")
    assert len(cases) == len(installed)
    assert [c.get("name") for c in cases if c.find("failure") is not None] == []
    assert len(json.loads((ci / "bmf.json").read_text())) == len(installed)
    assert "```text\nAnswer:" in (ci / "summary.md").read_text()
