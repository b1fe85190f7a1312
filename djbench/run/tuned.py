"""What a tuning search leaves: each candidate's outcome, and each server's best as
files in the run folder's tuned/ (its layout, knobs and exact command), shared by the
halving search (djbench.run.modes.tune) and the capacity one (.tune_capacity)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from djbench.results.model import RunDocument
from djbench.servers import SERVERS

Fate = Literal["best", "dropped", "undecided", "failed", "unmeasured"]


def write_files(document: RunDocument, run_dir: Path) -> dict[str, str]:
    """Each server's best as a file: its layout, knobs and the exact command it ran with."""
    assert document.tuning is not None
    folder = run_dir / "tuned"
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for server, config in document.tuning.best.items():
        entry = next(
            (e for e in document.results if e.server == server and e.config == config), None
        )
        found = next(
            c for c in document.tuning.candidates if c.server == server and c.config == config
        )
        command = entry.command.get("server") if entry is not None else None
        deploy_file = command.config_file if command else None
        native = None
        if deploy_file and Path(deploy_file).exists():
            spec = SERVERS[server]
            lines = spec.tuned_settings(found.workers, found.threads, found.knobs)
            header = (
                f"Tuned by djbench (runbench --tune, run {document.run_id}): the best of "
                f"{sum(1 for c in document.tuning.candidates if c.server == server)} "
                f"candidates by {document.tuning.objective} on that machine"
            )
            native = folder / server / Path(deploy_file).name
            native.parent.mkdir(parents=True, exist_ok=True)
            native.write_text(
                spec.tuned_file(Path(deploy_file).read_text(encoding="utf-8"), lines, header)
            )
        data = {
            "server": server,
            "config": config,
            "workers": found.workers,
            "threads": found.threads,
            "knobs": found.knobs,
            "objective": document.tuning.objective,
            "rps_per_round": found.rps,
            "command": command.shell if command else None,
            "deploy_file": deploy_file,
            "tuned_deploy_file": str(native) if native else None,
            "rerun": f"python manage.py runbench --config-from {document.run_id}",
        }
        path = folder / f"{server}.json"
        path.write_text(json.dumps(data, indent=2) + "\n")
        written[server] = str(path)
    return written
