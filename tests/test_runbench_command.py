"""runbench as a user runs it: bad input, --list, --verify-only, interruption."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import psutil
import pytest
from django.core.management import CommandError, call_command

from djbench.results.model import SCHEMA_VERSION
from djbench.servers import SERVERS, ServerSpec
from tests.live import ROOT, still_running, watch_children


def ghost() -> ServerSpec:
    """A server whose package is not installed."""
    return dataclasses.replace(
        SERVERS["uvicorn"],
        name="ghost",
        requires=("djbench_no_such_module",),
        extra_override="ghost-x",
    )


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("runbench", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--servers", "uwsgi,nginx"], "unknown server 'nginx'; valid: uwsgi, gunicorn-sync,"),
        (["--scenarios", "nope"], "unknown scenario 'nope'; valid: health-sync, health-async,"),
        (["--proxy", "nginx"], "unknown proxy 'nginx'; valid: none, caddy"),
        (["--cpus", "0/0"], "--cpus gives CPU(s) [0] to both sides"),
        (["--cpus", "7/99"], "not available here"),
        (["--cpus", "x"], "--cpus takes auto, none or SERVER/DRIVER"),
        (["--workers", "0"], "--workers takes auto or a whole number of at least 1"),
        (
            ["--scenario-file", "/nonexistent.toml"],
            "scenario file /nonexistent.toml does not exist",
        ),
    ],
)
def test_bad_input_is_one_line_error(args: list[str], message: str) -> None:
    with pytest.raises(CommandError) as caught:
        run("--verify-only", *args)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert caught.value.returncode == 2


def test_busy_port_is_a_sentence() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(CommandError) as caught:
            run("--verify-only", "--port", str(port))
    assert str(caught.value) == f"--port {port}: port {port} on 127.0.0.1 is already in use"


def test_bad_input_from_the_shell_has_no_traceback() -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "runbench", "--servers", "apache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().startswith("CommandError: unknown server 'apache'")


def test_list_shows_servers_install_state_and_scenarios(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SERVERS, "ghost", ghost())
    out, _ = run("--list")
    for name in SERVERS:
        assert name in out
    assert 'no: pip install "djbench[ghost-x]"' in out
    assert "ws-broadcast" in out and "GET /api/sync/movies?page=3" in out


@pytest.mark.servers
def test_verify_only_writes_results_and_reports_a_missing_server(
    live_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(SERVERS, "ghost", ghost())
    out, _ = run(
        "--verify-only",
        "--servers",
        "ghost,gunicorn-gevent,granian-asgi",
        "--scenarios",
        "health-sync,movies-async,ws-echo",
        "--proxy",
        "none,caddy",
        "--output",
        str(tmp_path),
        "--no-setup",
    )
    missing = "not installed (missing djbench_no_such_module)"
    assert f'skipped ghost: {missing}: pip install "djbench[ghost-x]"' in out
    assert "SynchronousOnlyOperation" in out
    assert "WebSocket needs an ASGI server; this one is WSGI" in out
    [results_file] = tmp_path.glob("*.json")
    document = json.loads(results_file.read_text())
    assert document["schema_version"] == SCHEMA_VERSION and document["kind"] == "verify"
    pairs = {(r["server"], r["proxy"], r["scenario"]): r["status"] for r in document["results"]}
    assert pairs[("granian-asgi", "caddy", "ws-echo")] == "ok"
    assert pairs[("gunicorn-gevent", "none", "movies-async")] == "incompatible"
    assert len(pairs) == 2 * 2 * 3
    assert all(r["command"]["server"]["shell"] for r in document["results"])
    assert document["environment"]["django"]
    assert "ghost" in document["skipped"]


@pytest.mark.servers
def test_sigint_leaves_no_process_behind(live_database: str, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "runbench",
            "--verify-only",
            "--no-setup",
            "--servers",
            "gunicorn-sync,uvicorn,hypercorn",
            "--proxy",
            "none,caddy",
            "--output",
            str(tmp_path),
        ],
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def serving(seen: dict[int, psutil.Process]) -> bool:
        # A server, not any child: runbench also runs short tool-version commands first.
        names = ("gunicorn", "uvicorn", "hypercorn", "caddy run")
        for proc in still_running(seen):
            with contextlib.suppress(psutil.Error):  # one that just ended
                if any(n in " ".join(proc.cmdline()) for n in names):
                    return True
        return False

    seen = watch_children(proc.pid, until=serving, timeout=60)
    assert serving(seen), "runbench started no server"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted; every server was stopped" in err
    assert "Traceback" not in err
    time.sleep(0.2)
    assert still_running(seen) == []


def test_unreachable_database_is_a_sentence() -> None:
    env = {**os.environ, "DATABASE_URL": "postgres://postgres@127.0.0.1:1/nope"}
    result = subprocess.run(
        [sys.executable, "manage.py", "runbench", "--verify-only", "--servers", "uvicorn"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3  # the run could not complete (djbench.run.exits)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("CommandError: setup command 'migrate --noinput -v 0' failed:")


def test_on_inconclusive_names_its_choices() -> None:
    with pytest.raises(CommandError) as caught:
        run("--on-inconclusive", "maybe", "--trials", "1")
    assert str(caught.value) == "--on-inconclusive 'maybe'; valid: pass, fail"
    assert caught.value.returncode == 2
