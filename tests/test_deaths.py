"""A server's end said with its cause, and a readiness 400 said at once (issue 36 item 7)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from djbench.launch import deaths
from djbench.launch.process import ProcessTree, ServerError, free_port

ANSWERS_400 = """
import http.server, sys


class Bad(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(400)
        self.end_headers()
        self.wfile.write(b"Bad Request (400)")

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Bad).serve_forever()
"""


def tree(tmp_path: Path, argv: list[str]) -> ProcessTree:
    return ProcessTree(
        name="test", argv=argv, env=dict(os.environ), cwd=tmp_path, log_path=tmp_path / "log"
    )


def wait_dead(t: ProcessTree) -> None:
    deadline = time.monotonic() + 10
    while t.exited() is None and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_signal_from_another_process_is_said_as_such(tmp_path: Path) -> None:
    t = tree(tmp_path, [sys.executable, "-c", "import time; time.sleep(60)"])
    t.start()
    try:
        os.kill(t.pid, signal.SIGKILL)  # not djbench: the test is "another process"
        wait_dead(t)
        said = t.ended()
        assert said.startswith("signal 9 (SIGKILL), not sent by djbench"), said
        if deaths.oom_kills() is not None:
            assert "the OOM killer killed nothing in this memory cgroup" in said
    finally:
        t.stop()


def test_a_stop_is_said_as_djbenchs_own(tmp_path: Path) -> None:
    script = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_DFL); time.sleep(60)"
    t = tree(tmp_path, [sys.executable, "-c", script])
    t.start()
    t.stop()
    assert t.ended() == "signal 15 (SIGTERM), sent by djbench while stopping it"


def test_the_oom_killer_is_named_from_the_cgroups_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cgroup v1's memory.oom_control as the kernel writes it (recorded shape), its
    oom_kill count raised between the server's start and its death."""
    folder = tmp_path / "memory"
    folder.mkdir()
    control = folder / "memory.oom_control"
    control.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    monkeypatch.setattr(deaths, "_memory_cgroup", lambda: (folder, "v1"))
    assert deaths.oom_kills() == 3
    control.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 4\n")
    said = deaths.cause(-9, 12345, sent=[], oom_before=3)
    assert said.startswith("signal 9 (SIGKILL), by the kernel's OOM killer"), said
    assert "oom_kill count rose from 3 to 4" in said
    assert deaths.cause(3, 12345, sent=[], oom_before=3) == "exit code 3"


def test_a_readiness_400_is_said_at_once_with_allowed_hosts(tmp_path: Path) -> None:
    port = free_port()
    t = tree(tmp_path, [sys.executable, "-c", ANSWERS_400, str(port)])
    t.start()
    started = time.monotonic()
    try:
        with pytest.raises(ServerError) as caught:
            t.wait_ready(f"http://127.0.0.1:{port}/", timeout=60)
    finally:
        t.stop()
    assert time.monotonic() - started < 15  # not the 60 s wait
    assert "HTTP 400 (Bad Request)" in str(caught.value)
    assert "add '127.0.0.1' to ALLOWED_HOSTS" in str(caught.value)
