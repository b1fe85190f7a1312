"""What a team lead reads (issue 57): the report of the sample's default run, recorded
from a real `make bench` (tests/fixtures/results/sample-default.json), rendered in
Chromium: the decision first, with intervals; no two labels of a chart overlap; every
chart of a ranked figure draws its intervals. And the words of a run whose budget ended
before its planned rounds say the rounds that completed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from djbench.reports import answer_words, report
from djbench.reports import guide as guide_report
from djbench.verdicts.runs import load_run

FIXTURES = Path(__file__).parent / "fixtures" / "results"
SAMPLE = FIXTURES / "sample-default.json"

# Injected into a copy of the report (the report itself runs no script): every chart's
# text boxes as Chromium lays them out, and each pair of boxes that overlaps by more than
# a pixel both ways. Matplotlib writes each text (tick label, legend entry, annotation,
# title) as a group `text_N` of glyph paths.
OVERLAPS = """
<script>
window.addEventListener("load", () => {
  const found = [];
  document.querySelectorAll("div.chart svg").forEach((svg, chart) => {
    const boxes = [...svg.querySelectorAll('g[id^="text_"]')]
      .map((g) => g.getBoundingClientRect())
      .filter((r) => r.width > 0 && r.height > 0);
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i], b = boxes[j];
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1) found.push([chart, i, j, Math.round(w), Math.round(h)]);
      }
    }
    found.push(["texts", chart, boxes.length]);
  });
  const out = document.createElement("pre");
  out.id = "overlaps";
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
});
</script>
"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is not installed (CI=true: .ci/run installs it)")
        pytest.skip("chromium is not installed")
    return found


def rendered_dom(page: Path, profile: Path) -> str:
    """The page's DOM after its scripts ran, in headless Chromium at 1280 px."""
    done = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--window-size=1280,1600",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def overlaps_in(html: str, tmp_path: Path) -> tuple[list[list[int]], dict[int, int]]:
    page = tmp_path / "report.html"
    page.write_text(html.replace("</body>", OVERLAPS + "</body>"))
    dom = rendered_dom(page, tmp_path / "profile")
    match = re.search(r'<pre id="overlaps">(.*?)</pre>', dom, re.S)
    assert match, "the page's script did not run"
    found = json.loads(match.group(1).replace("&quot;", '"'))
    texts = {int(f[1]): int(f[2]) for f in found if f[0] == "texts"}
    return [f for f in found if f[0] != "texts"], texts


@pytest.mark.parametrize("recorded", ["sample-default.json", "budget-cut.json"])
def test_no_two_labels_overlap_in_any_chart(recorded: str, tmp_path: Path) -> None:
    run = load_run(FIXTURES / recorded)
    overlaps, texts = overlaps_in(report.html([run]), tmp_path)
    assert len(texts) >= 5 and all(n > 5 for n in texts.values())  # labels were read
    assert overlaps == [], f"charts with overlapping labels (chart, a, b, w, h): {overlaps}"


class FirstScreen(HTMLParser):
    """The first section's table, cell by cell, and every chart's error bars."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.cells: dict[str, list[str]] = {}
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "section":
            self.sections.append(dict(attrs).get("id") or "")
        if tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.cells.setdefault(self.sections[-1], []).append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_the_first_screen_is_the_decision_with_its_intervals() -> None:
    run = load_run(SAMPLE)
    html = report.html([run])
    screen = FirstScreen()
    screen.feed(html)
    assert screen.sections[0] == "decision"
    cells = screen.cells["decision"]
    for page in run.scenarios():
        assert page in cells
    # Every page's figure has its interval, or says why it has none.
    figures = [c for c in cells if "req/s" in c]
    assert figures and all(re.search(r"\[[\d,]+-[\d,]+\]|no interval", f) for f in figures)
    # The layout sweep is a chart of its own, never a deployment of the trade-offs.
    if run.plan.layouts is not None:
        assert f'id="layouts-{run.run_tag}"' in html
        tradeoffs = html.split('id="tradeoff-')[1].split("</section>")[0]
        assert "{workers=" not in tradeoffs


def test_every_chart_of_a_ranked_figure_draws_its_intervals() -> None:
    """Throughput, latency and the trade-offs: error bars (matplotlib's LineCollection
    groups) in every one drawn from pairs with two rounds or more."""
    html = report.html([load_run(SAMPLE)])
    sections = re.findall(r'<section id="([^"]+)".*?</section>', html, re.S)
    bodies = dict(zip(sections, re.split(r'<section id="[^"]+"', html)[1:], strict=True))
    ranked = [s for s in sections if s.split("-")[0] in ("scenario", "latency", "tradeoff")]
    assert ranked
    for section in ranked:
        assert "LineCollection" in bodies[section], f"{section} draws no interval"


def test_headers_say_the_rounds_that_completed() -> None:
    """A run whose budget ended before its planned rounds (recorded: the sample's
    default profile with --budget 3m, 3 rounds asked and 1 run): every header says the
    rounds run, and each page is a screen, not a verdict."""
    run = load_run(FIXTURES / "budget-cut.json")
    planned = run.plan.trials_asked
    done = {len(p.entry.trials) for p in run.pairs if p.entry.trials and not p.entry.config}
    assert planned is not None and max(done) < planned, "the fixture is not a cut run"
    said = answer_words.rounds_done(run)
    assert said.startswith(f"{max(done)} round(s)") or said.startswith(f"{min(done)}-")
    head = answer_words.lines(run)[0]
    assert said in head and f"{planned} round(s)" not in head
    guide_head = guide_report.markdown(run).split("## Answer")[0]
    assert said in guide_head and f"{planned} round(s)" not in guide_head
    assert "?" not in guide_head and "?" not in head
    html = report.html([run])
    assert html.count(said) >= 2  # the decision's intro and the answer as printed
    for line in answer_words.lines(run)[1:4]:
        assert ": a screen, not a verdict: highest so far " in line, line
        assert ": use " not in line
