"""The builtin driver against a server that closes every connection, beside wrk.

    python loadtests/closing_connections.py [ROUNDS] [CONNECTIONS] [WORKERS]

Starts gunicorn-sync (one worker unless WORKERS) (a new connection per request) on CPU 0 and, each
round in turn, wrk and the builtin driver on CPU 1 (3 s each, closed loop). Besides
req/s it reads the server's CPU time over the middle 1.5 s of each run: how busy the
server was (a driver that is slow to send or to close leaves it idle) and its CPU per
request (what the driver's way of connecting costs the server). Prints the medians and
the builtin/wrk ratio per round. Issue 22 item 8's figures come from this script. The
server is started in its own session and stopped by its process group, whatever
happens; every load is bounded (3 s).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PORT = 18128
PATH = "/api/sync/health"


def server_cpu(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def one(command: str, procs: list[psutil.Process], builtin: bool) -> tuple[float, float, float]:
    """(req/s, server busy share, server CPU ms per request) of one 3 s run."""
    proc = subprocess.Popen(command, shell=True, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    time.sleep(1.2)
    before, started = server_cpu(procs), time.monotonic()
    time.sleep(1.5)
    used, wall = server_cpu(procs) - before, time.monotonic() - started
    out = proc.communicate(timeout=30)[0]
    if builtin:
        line = [x for x in out.splitlines() if x.startswith("DJBENCH-BUILTIN")][-1]
        found = json.loads(line.split(" ", 1)[1])
        rps = found["requests"] / found["duration_s"]
    else:
        rps = float(next(x for x in out.splitlines() if "Requests/sec" in x).split()[1])
    return rps, used / wall, used / wall / rps * 1000


def main(rounds: int, connections: int, workers: int) -> None:
    server = subprocess.Popen(
        f"taskset -c 0 {BIN}/gunicorn -c deploy/gunicorn.conf.py --bind 127.0.0.1:{PORT} "
        f"--workers {workers} --worker-class sync --max-requests 0 sampleproject.wsgi:application",
        shell=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        time.sleep(3)
        procs = psutil.Process(server.pid).children(recursive=True)
        url = f"http://127.0.0.1:{PORT}{PATH}"
        commands = {
            "wrk": f"taskset -c 1 wrk -t1 -c{connections} -d3s {url}",
            "builtin": f"taskset -c 1 {sys.executable} -m djbench.measure.drivers.loadgen "
            f"--port {PORT} --path {PATH} --connections {connections} --duration 3 --warmup 0",
        }
        found: dict[str, list[tuple[float, float, float]]] = {k: [] for k in commands}
        for _ in range(rounds):
            for name, command in commands.items():
                found[name].append(one(command, procs, name == "builtin"))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    for name, runs in found.items():
        print(
            f"{name:8} c={connections}: median {statistics.median(r[0] for r in runs):,.0f} "
            f"req/s, server busy {statistics.median(r[1] for r in runs):.1%}, "
            f"{statistics.median(r[2] for r in runs):.3f} ms of server CPU per request"
        )
    ratios = [b[0] / w[0] for w, b in zip(found["wrk"], found["builtin"], strict=True)]
    print("builtin/wrk per round:", ", ".join(f"{r:.3f}" for r in ratios))
    print(f"median x{statistics.median(ratios):.3f}")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:4]]
    main(*(args + [10, 32, 1][len(args) :]))
