"""`--resume` is safe: it finishes a run only with what the run started with.

Trials from before and after an interruption are mixed in one median, so everything
that could change a figure must be the same: the options (taken from the run; any
given on the command line must agree with them), each scenario's definition
(fingerprint), the Python, Django, server and tool versions, the database and settings,
and the project's commit. Each refusal is one sentence naming what changed.
"""

from __future__ import annotations

from typing import Any

from djbench.plan.runplan import RunOptions, from_command
from djbench.results.model import Environment, RunDocument

# Options that say where results go or whether set-up commands run, not what is measured.
NOT_COMPARED = {"output", "setup"}


def _flag(name: str) -> str:
    return {"proxies": "--proxy", "axes": "--axis", "setup": "--no-setup"}.get(
        name, "--" + name.replace("_", "-")
    )


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "(all)"
    if isinstance(value, dict):
        return ";".join(f"{k}={','.join(v)}" for k, v in value.items()) or "(none)"
    return str(value)


def option_conflicts(given: RunOptions, saved: RunOptions) -> list[str]:
    """Options given on the command line (not left at their default) that the run lacks."""
    baseline = from_command({"quick": given.profile == "quick"}, "rounds")
    found = []
    for name in RunOptions.model_fields:
        if name in NOT_COMPARED:
            continue
        mine, theirs = getattr(given, name), getattr(saved, name)
        # The profile's own baseline is "default"; the other options' is the profile's.
        baseline_value = "default" if name == "profile" else getattr(baseline, name)
        if mine != baseline_value and mine != theirs:
            found.append(f"{_flag(name)} {_shown(mine)} (the run has {_shown(theirs)})")
    return found


def _versions(env: Environment) -> dict[str, str | None]:
    found: dict[str, str | None] = {
        "Python": env.python,
        "Django": env.django,
        "settings module": env.settings_module,
        "middleware profile": env.middleware_profile,
        "database": env.database.vendor,
        "database server": env.database.server_version,
        "channel layer": env.channel_layer,
        "git commit": env.git_sha,
    }
    found.update({f"package {k}": v for k, v in env.packages.items()})
    found.update({f"tool {k}": v for k, v in env.tools.items()})
    return found


def environment_changes(saved: Environment, now: Environment) -> list[str]:
    """What differs between the run's environment and now. A value one side could not
    read (a server version its process could not query) is not taken for a change; a
    package or tool present on one side only is."""
    before, after = _versions(saved), _versions(now)
    changes = [
        f"{name} {before.get(name) or 'absent'} -> {after.get(name) or 'absent'}"
        for name in sorted(set(before) | set(after))
        if before.get(name) != after.get(name)
        and not (name in before and name in after and None in (before[name], after[name]))
    ]
    if now.git_dirty and not saved.git_dirty and saved.git_sha:
        changes.append("the project's checkout has uncommitted changes now")
    return changes


def scenario_changes(document: RunDocument, fingerprints: dict[str, str]) -> list[str]:
    saved = {name: meta.fingerprint for name, meta in document.plan.scenarios.items()}
    found = [
        f"scenario {name!r} changed (fingerprint {saved[name]} -> {fingerprints[name]})"
        for name in sorted(set(saved) & set(fingerprints))
        if saved[name] != fingerprints[name]
    ]
    found += [f"scenario {name!r} is gone" for name in sorted(set(saved) - set(fingerprints))]
    return found


def refusal(run_id: str, problems: list[str], what: str) -> str:
    return (
        f"--resume {run_id}: {what}: {'; '.join(problems)}. Resuming would mix trials of "
        "two different set-ups; start a new run (or restore what changed)"
    )
