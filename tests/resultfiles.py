"""Build small, valid results documents for tests of report, compare and guide.

They are built through the results model (the only way a results file is made) and
summarised by the same function runbench uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from djbench.results import store
from djbench.results.model import (
    Command,
    Environment,
    Latency,
    Notice,
    PairResult,
    PlanRecord,
    RunDocument,
    Trial,
    Verification,
    WindowMemory,
)
from djbench.verdicts.runs import summarise

PLAN: dict[str, Any] = {
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
        "movies-sync": {
            "fingerprint": "f1",
            "workload": "sync-orm",
            "kind": "http",
            "variant": "sync",
            "queries": 2,
        },
        "sleep-async": {
            "fingerprint": "f1",
            "workload": "async-io",
            "kind": "http",
            "variant": "async",
            "queries": 0,
        },
    },
}

UNDERSERVED = Notice(code="underserved", params={"in_flight": 1.0, "concurrency": 32})


def trial(
    rps: float,
    p99: float = 20.0,
    pss: float = 60.0,
    round_index: int = 0,
    warnings: list[Notice] | None = None,
) -> Trial:
    return Trial(
        round=round_index,
        valid=True,
        rps=rps,
        requests=int(rps * 3),
        duration_s=3.0,
        warnings=warnings or [],
        latency_ms=Latency(
            p50=p99 / 4, p90=p99 / 2, p99=p99, p999=p99 * 1.2, max=p99 * 1.5, mean=p99 / 3
        ),
        memory_mb=WindowMemory(
            pss_peak=pss,
            pss_mean=pss - 1,
            uss_peak=pss - 10,
            rss_peak=pss + 20,
            uss_worker_peak=pss - 30,
            processes=2,
            cpu_percent=95.0,
        ),
    )


def entry(
    server: str,
    scenario: str,
    rps: list[float],
    *,
    proxy: str = "none",
    status: str = "ok",
    reason: str = "",
    p99: float | list[float] = 20.0,
    pss: float | list[float] = 60.0,
    shape: str = "200 application/json {}",
    fingerprint: str = "f1",
    warnings: list[Notice] | None = None,
    variant: dict[str, str] | None = None,
    interface: str | None = None,
    protocol: str = "h1",
) -> PairResult:
    """A pair; `reason` (free text) is stored as a notice of code 'legacy'."""
    pss_values = pss if isinstance(pss, list) else [pss] * len(rps)
    p99_values = p99 if isinstance(p99, list) else [p99] * len(rps)
    trials = (
        [
            trial(r, p, m, i, warnings)
            for i, (r, p, m) in enumerate(zip(rps, p99_values, pss_values, strict=True))
        ]
        if status == "ok"
        else []
    )
    notice = Notice(code="legacy", params={"text": reason}) if reason else None
    result = PairResult(
        server=server,
        proxy=proxy,
        protocol=protocol,
        variant=variant or {},
        interface=interface,
        scenario=scenario,
        concurrency=32,
        status="ok" if status == "ok" else status,  # type: ignore[arg-type]
        reason=notice,
        scenario_fingerprint=fingerprint,
        verify=Verification(
            status="ok" if status in ("ok", "invalid") else status,  # type: ignore[arg-type]
            reason=notice,
            shape=shape,
        ),
        trials=trials,
        command={"server": Command(argv=[server], shell=f"{server} --bind 127.0.0.1:1")},
    )
    summarise(result, [])
    return result


def document(run_id: str, entries: list[PairResult], **plan: Any) -> RunDocument:
    return RunDocument(
        run_id=run_id,
        kind="benchmark",
        status="complete",
        plan=PlanRecord.model_validate({**PLAN, **plan}),
        environment=Environment.model_validate(
            {
                "django": "5.2",
                "python": "3.11.7",
                "cpu_model": "test CPU",
                "cpu_count": 2,
                "database": {"vendor": "sqlite"},
                "packages": {"gunicorn": "27.0.1"},
            }
        ),
        results=entries,
    )


def write(folder: Path, run_id: str, entries: list[PairResult], **plan: Any) -> Path:
    path = folder / f"{run_id}.json"
    store.write_atomic(path, document(run_id, entries, **plan))
    return path
