"""Older files are read through this: schema 1 -> 2 -> 3.

Schema 2 -> 3: a trial's `extra` (a driver's figures by name, untyped) became
`driver_figures` (typed, djbench.results.driver_model); keys no field names are dropped.

A matrix file, schema 2 -> 3: its verdicts held sentences (a metric as "x0.944
[0.93-0.96] p=0.012", reasons, shape changes, the checks' words); the figures are read
back from them, any other text kept as a ``legacy`` notice.

Schema 1 -> 2: files written before the typed model.

Schema 1 held warnings and reasons as prose. Warnings whose wording is known become
codes again (the guide needs to recognise an under-served pair); any other text is kept
as a ``legacy`` notice, shown as it was written.
"""

from __future__ import annotations

import re
from typing import Any

from djbench.results.driver_model import DriverFigures

_WARNINGS: list[tuple[re.Pattern[str], str, tuple[str, ...]]] = [
    (re.compile(r"load driver used (\d+(?:\.\d+)?)% of its CPUs"), "driver_busy", ("cpu_percent",)),
    (
        re.compile(r"only (\d+(?:\.\d+)?) of (\d+) requests in flight"),
        "client_short",
        ("in_flight", "concurrency"),
    ),
    (
        re.compile(r"served about (\d+(?:\.\d+)?) of (\d+) connections at a time"),
        "underserved",
        ("in_flight", "concurrency"),
    ),
]


def notice(text: Any) -> dict[str, Any] | None:
    """A schema-1 reason (prose) as a notice; None for an empty one."""
    if not text:
        return None
    return {"code": "legacy", "params": {"text": str(text)}}


def warning(text: str) -> dict[str, Any]:
    for pattern, code, names in _WARNINGS:
        found = pattern.search(text)
        if found:
            values = [float(g) if "." in g else int(g) for g in found.groups()]
            return {"code": code, "params": dict(zip(names, values, strict=True))}
    return {"code": "legacy", "params": {"text": text}}


def _trial(t: dict[str, Any]) -> dict[str, Any]:
    t = dict(t)
    t["invalid"] = notice(t.pop("invalid_reason", None))
    t["warnings"] = [warning(w) for w in t.get("warnings", [])]
    for key in ("memory_mb", "proxy_memory_mb"):
        if not t.get(key):
            t[key] = None
    return t


def _entry(e: dict[str, Any], kind: str) -> dict[str, Any]:
    e = dict(e)
    e["reason"] = notice(e.get("reason"))
    if kind == "verify":
        status = e["status"]
        e["verify"] = {
            "status": status if status in ("ok", "incompatible") else "failed",
            "reason": e["reason"],
            "shape": e.pop("shape", ""),
        }
    elif e.get("verify"):
        v = dict(e["verify"])
        v["reason"] = notice(v.get("reason"))
        e["verify"] = v
    else:
        e["verify"] = None
    e["trials"] = [_trial(t) for t in e.get("trials", [])]
    summary = dict(e.get("summary") or {})
    summary["warnings"] = [warning(w) for w in summary.get("warnings", [])]
    e["summary"] = summary
    return e


def from_v1(data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    out["schema_version"] = 2
    kind = out.get("kind", "benchmark")
    if "settings" in out:  # verify-only files kept their settings apart
        settings = dict(out.pop("settings") or {})
        plan = dict(out.get("plan") or {})
        for key in ("workers", "threads", "server_cpus", "driver_cpus", "proxies"):
            if key in settings:
                plan[key] = settings[key]
        plan["scenario_file"] = settings.get("scenario_file")
        out["plan"] = plan
    out["skipped"] = {k: notice(v) for k, v in (out.get("skipped") or {}).items()}
    out["results"] = [_entry(e, kind) for e in out.get("results", [])]
    if kind == "verify":
        out.setdefault("status", "complete")
    return out


def from_v2(data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    out["schema_version"] = 3
    results = []
    for entry in out.get("results", []):
        entry = dict(entry)
        trials = []
        for trial in entry.get("trials", []):
            trial = dict(trial)
            extra = trial.pop("extra", None) or {}
            known = {k: v for k, v in extra.items() if k in DriverFigures.model_fields}
            trial["driver_figures"] = known
            trials.append(trial)
        entry["trials"] = trials
        results.append(entry)
    out["results"] = results
    return out


_METRIC = re.compile(
    r"^x(?P<ratio>[\d.]+)(?: \[(?P<low>[\d.]+)-(?P<high>[\d.]+)\])?"
    r"(?: p=(?P<p>[\d.e+-]+|\?))?(?P<drifting> drifting)?$"
)


def _matrix_metric(text: str, verdict: str) -> dict[str, Any]:
    found = _METRIC.match(text)
    if found is None:
        return {"verdict": verdict, "notes": [{"code": "legacy", "params": {"text": text}}]}
    low, high, p = found["low"], found["high"], found["p"]
    return {
        "verdict": verdict,
        "ratio": float(found["ratio"]),
        "ci": [float(low), float(high)] if low and high else None,
        "p": float(p) if p and p != "?" else None,
        "drifting": bool(found["drifting"]),
    }


def _shape(text: str) -> dict[str, str]:
    key, _, change = text.rpartition(": ")
    base, _, new = change.partition(" -> ")
    return {"key": key, "base": base, "new": new}


def matrix_from_v2(data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    out["schema_version"] = 3
    verdicts = []
    for v in out.get("verdicts", []):
        v = dict(v)
        v.pop("worse", None)
        v.pop("better", None)
        v["shape_changes"] = [_shape(t) for t in v.get("shape_changes", [])]
        v["plan_differences"] = [notice(t) for t in v.get("plan_differences", [])]
        pairs = []
        for pair in v.get("pairs", []):
            pair = dict(pair)
            pair["metrics"] = {
                k: _matrix_metric(text, pair.get("verdict", ""))
                for k, text in pair.get("metrics", {}).items()
            }
            pair["reasons"] = [notice(t) for t in pair.get("reasons", [])]
            pairs.append(pair)
        v["pairs"] = pairs
        verdicts.append(v)
    out["verdicts"] = verdicts
    out["checks"] = [{k: c[k] for k in c if k != "said"} for c in out.get("checks", [])]
    return out
