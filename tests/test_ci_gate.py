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


def test_the_readme_s_ci_section_is_those_files() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Upgrade validation in CI") :]
    for name, language in (("github-actions.yml", "yaml"), ("upgrade-gate.sh", "bash")):
        text = (GATE.parent / name).read_text().rstrip()
        assert f"```{language}\n{text}\n```" in section, f"copy deploy/ci/{name} into the README"
