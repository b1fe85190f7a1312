"""The CI gate's workflow files run its script (deploy/ci/upgrade-gate.sh); the script
itself runs end to end in tests/test_matrix.py's ref matrix (two later commits, one
broken, one 20 ms slower per request), so that make test pays for one such matrix."""

from __future__ import annotations

from tests.live import ROOT

GATE = ROOT / "deploy" / "ci" / "upgrade-gate.sh"


def test_the_workflow_files_run_the_gate_script() -> None:
    assert GATE.stat().st_mode & 0o111, "the script is executable"
    for name in ("github-actions.yml", "gitlab-ci.yml"):
        assert "deploy/ci/upgrade-gate.sh" in (GATE.parent / name).read_text()


def test_the_readme_s_ci_section_is_the_workflow_file() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Upgrade validation in CI") :]
    text = (GATE.parent / "github-actions.yml").read_text().rstrip()
    assert f"```yaml\n{text}\n```" in section, "copy deploy/ci/github-actions.yml into the README"
    assert "deploy/ci/upgrade-gate.sh" in section


def test_the_workflows_count_cost_first_and_install_valgrind() -> None:
    for name in ("github-actions.yml", "gitlab-ci.yml"):
        text = (GATE.parent / name).read_text()
        assert "--cost-only" in text and "valgrind" in text, name
