"""The README and the help texts say what the code does: every option a README command
line names exists on that command, and the verdict options name the methods used."""

from __future__ import annotations

import re
from pathlib import Path

from django.core.management import load_command_class

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ("runbench", "benchcompare", "benchreport", "benchguide", "benchcalibrate", "benchinit")


def options_of(command: str) -> set[str]:
    parser = load_command_class("djbench", command).create_parser("manage.py", command)
    return {flag for action in parser._actions for flag in action.option_strings}


def help_of(command: str, flag: str) -> str:
    parser = load_command_class("djbench", command).create_parser("manage.py", command)
    action = next(a for a in parser._actions if flag in a.option_strings)
    return str(action.help)


def test_every_option_on_a_documented_command_line_exists() -> None:
    known = {c: options_of(c) for c in COMMANDS}
    missing = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        missing += _unknown_options(page, known)
    assert missing == []


def _unknown_options(page: Path, known: dict[str, set[str]]) -> list[str]:
    """Every `--option` on a `manage.py COMMAND` line of `page` that COMMAND lacks."""
    missing = []
    lines = page.read_text().splitlines()
    name = page.relative_to(ROOT)
    for number, line in enumerate(lines, 1):
        # A command line and its continuation lines (ending in a backslash).
        found = re.search(r"manage\.py (\w+)", line)
        if not found or found[1] not in known:
            continue
        text, i = line, number
        while text.rstrip().endswith("\\") and i < len(lines):
            text, i = text + " " + lines[i], i + 1
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text.split("#")[0]):
            if flag not in known[found[1]]:
                missing.append(f"{name}:{number}: {found[1]} has no {flag}")
    return missing


def test_verdict_options_name_the_methods_used() -> None:
    for command in ("benchcompare", "runbench"):
        alpha = help_of(command, "--alpha")
        assert "Mann-Whitney" not in alpha and "Holm" not in alpha
        assert "discovery rate" in alpha
    assert "Welch" in help_of("benchcompare", "--alpha")
    assert "paired t" in help_of("runbench", "--alpha")
    assert "equivalence margin" in help_of("benchcompare", "--threshold")


def test_the_readme_is_short_and_its_links_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for target in re.findall(r"\]\(((?:docs/)[^)#]+)", readme):
        assert (ROOT / target).exists(), target


def test_the_scenario_file_reference_is_generated_from_its_models() -> None:
    """Every key a scenario file may hold is on the page, as its model says it."""
    from djbench.plan import scenario_reference
    from djbench.plan.scenario_file import QUERY_COUNT

    written = (ROOT / "docs" / "reference" / "scenarios.md").read_text()
    assert written == scenario_reference.reference(), (
        f"regenerate it: {scenario_reference.REFERENCE_COMMAND}"
    )
    for _, model in scenario_reference.TABLES:
        for name, field in model.model_fields.items():
            assert f"| `{field.alias or name}` |" in written
    assert QUERY_COUNT in written


def test_the_example_of_the_scenario_reference_loads(tmp_path: Path) -> None:
    from djbench.plan import scenario_reference, scenarios

    path = tmp_path / "example.toml"
    path.write_text(scenario_reference.EXAMPLE)
    loaded = scenarios.load(path)
    assert loaded.names() == ["home", "movie", "search", "traffic"]
    assert loaded.select(["search"])[0].writes  # a POST writes
