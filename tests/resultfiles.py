"""Build small, valid results documents for tests of report, compare and guide."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from djbench.results import SCHEMA_VERSION

PLAN = {
    "driver": "wrk",
    "workers": 1,
    "threads": None,
    "server_cpus": [0],
    "driver_cpus": [1],
    "keep_alive": True,
    "loop": "closed",
    "rate": None,
    "duration": 3.0,
    "warmup": 1.0,
    "trials": 6,
    "concurrency": [32],
    "pinning": "taskset",
    "scenarios": {
        "movies-sync": {"workload": "sync-orm", "kind": "http", "variant": "sync", "queries": 2},
        "sleep-async": {"workload": "async-io", "kind": "http", "variant": "async", "queries": 0},
    },
}


def trial(
    rps: float,
    p99: float = 20.0,
    pss: float = 60.0,
    round_index: int = 0,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "round": round_index,
        "valid": True,
        "rps": rps,
        "requests": int(rps * 3),
        "error_count": 0,
        "non_2xx": 0,
        "warnings": warnings or [],
        "latency_ms": {
            "p50": p99 / 4,
            "p90": p99 / 2,
            "p99": p99,
            "p999": p99 * 1.2,
            "max": p99 * 1.5,
            "mean": p99 / 3,
        },
        "memory_mb": {
            "pss_peak": pss,
            "pss_mean": pss - 1,
            "uss_peak": pss - 10,
            "rss_peak": pss + 20,
            "uss_worker_peak": pss - 30,
            "processes": 2,
            "cpu_percent": 95.0,
        },
    }


def entry(
    server: str,
    scenario: str,
    rps: list[float],
    *,
    proxy: str = "none",
    status: str = "ok",
    reason: str = "",
    p99: float = 20.0,
    pss: float = 60.0,
    shape: str = "200 application/json {}",
    fingerprint: str = "f1",
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    trials = [trial(r, p99, pss, i, warnings) for i, r in enumerate(rps)] if status == "ok" else []
    median = sorted(rps)[len(rps) // 2] if rps else None
    return {
        "server": server,
        "proxy": proxy,
        "scenario": scenario,
        "concurrency": 32,
        "status": status,
        "reason": reason,
        "scenario_fingerprint": fingerprint,
        "verify": {
            "status": status if status != "invalid" else "ok",
            "reason": reason,
            "shape": shape,
        },
        "trials": trials,
        "command": {"server": {"shell": f"{server} --bind 127.0.0.1:1", "env": {}}},
        "summary": {
            "rps": {"n": len(trials), "median": median},
            "latency_p50_ms": {"median": p99 / 4},
            "latency_p99_ms": {"median": p99},
            "errors": 0,
            "non_2xx": 0,
            "warnings": sorted(set(warnings or [])),
        },
        "memory_mb": {
            "pss_idle": pss - 5,
            "pss_peak": pss,
            "uss_peak": pss - 10,
            "uss_worker_peak": pss - 30,
            "rss_peak": pss + 20,
            "processes": 2,
            "pss_after": pss - 2,
        },
    }


def document(run_id: str, entries: list[dict[str, Any]], **plan: Any) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "kind": "benchmark",
        "status": "complete",
        "plan": {**PLAN, **plan},
        "environment": {
            "django": "5.2",
            "python": "3.11.7",
            "cpu_model": "test CPU",
            "cpu_count": 2,
            "database": {"vendor": "sqlite"},
            "packages": {"gunicorn": "27.0.1"},
        },
        "deployment_rounds": [],
        "results": entries,
    }


def write(folder: Path, run_id: str, entries: list[dict[str, Any]], **plan: Any) -> Path:
    path = folder / f"{run_id}.json"
    path.write_text(json.dumps(document(run_id, entries, **plan)))
    return path
