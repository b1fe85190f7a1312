"""Schema 1 -> 2: files written before the typed model are read through this.

Schema 1 held warnings and reasons as prose. Warnings whose wording is known become
codes again (the guide needs to recognise an under-served pair); any other text is kept
as a ``legacy`` notice, shown as it was written.
"""

from __future__ import annotations

import re
from typing import Any

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
