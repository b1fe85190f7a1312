"""A read-only view of results files, shared by report, compare and guide.

Nothing here runs a server: everything comes from the JSON that runbench wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from djbench import results


@dataclass(frozen=True)
class Pair:
    """One (server, scenario, concurrency, proxy) of one run."""

    run_id: str
    server: str
    proxy: str
    scenario: str
    concurrency: int | None
    status: str
    reason: str
    entry: dict[str, Any]

    @property
    def key(self) -> tuple[str, str, int | None, str]:
        return (self.server, self.scenario, self.concurrency, self.proxy)

    @property
    def label(self) -> str:
        return self.server if self.proxy == "none" else f"{self.server}+{self.proxy}"

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.valid_trials)

    @property
    def valid_trials(self) -> list[dict[str, Any]]:
        return [t for t in self.entry.get("trials", []) if t.get("valid")]

    def series(self, metric: str) -> list[float]:
        """Per-trial values of rps, p50, p90, p99, p999, pss_peak, uss_peak, rss_peak."""
        trials = self.valid_trials
        if metric == "rps":
            return [float(t["rps"]) for t in trials]
        if metric in ("p50", "p90", "p99", "p999", "max", "mean"):
            return [float(t["latency_ms"][metric]) for t in trials if metric in t["latency_ms"]]
        return [float(t["memory_mb"][metric]) for t in trials if t.get("memory_mb", {}).get(metric)]

    def median(self, metric: str) -> float | None:
        summary = self.entry.get("summary", {})
        key = "rps" if metric == "rps" else f"latency_{metric}_ms"
        value = summary.get(key, {}).get("median")
        return float(value) if value is not None else None

    def memory(self, name: str) -> float | None:
        value = (self.entry.get("memory_mb") or {}).get(name)
        return float(value) if isinstance(value, int | float) else None

    def rps_per_100mb(self) -> float | None:
        rps, pss = self.median("rps"), self.memory("pss_peak")
        return rps / pss * 100 if rps and pss else None


@dataclass(frozen=True)
class Run:
    path: Path
    document: dict[str, Any]
    pairs: list[Pair]

    @property
    def run_id(self) -> str:
        return str(self.document.get("run_id", self.path.stem))

    @property
    def plan(self) -> dict[str, Any]:
        return dict(self.document.get("plan") or {})

    @property
    def environment(self) -> dict[str, Any]:
        return dict(self.document.get("environment") or {})

    def scenarios(self) -> list[str]:
        return list(dict.fromkeys(p.scenario for p in self.pairs))

    def by_scenario(self, scenario: str) -> list[Pair]:
        return [p for p in self.pairs if p.scenario == scenario]


def load_run(path: Path) -> Run:
    """A benchmark results file; ResultsError (one sentence) for anything else."""
    document = results.load(path)
    if document.get("kind") != "benchmark":
        raise results.ResultsError(
            f"{path} is a {document.get('kind', 'unknown')!r} file, not a benchmark run"
        )
    entries = document["results"]
    if not entries:
        raise results.ResultsError(f"{path} holds no results (an empty run)")
    pairs = []
    for entry in entries:
        try:
            pairs.append(
                Pair(
                    run_id=str(document.get("run_id")),
                    server=entry["server"],
                    proxy=entry["proxy"],
                    scenario=entry["scenario"],
                    concurrency=entry.get("concurrency"),
                    status=entry["status"],
                    reason=entry.get("reason", ""),
                    entry=entry,
                )
            )
        except (KeyError, TypeError):
            raise results.ResultsError(f"{path} has a malformed result entry") from None
    return Run(path=path, document=document, pairs=pairs)
