"""Behind a proxy as in production (issue 27): Caddy terminating TLS with its internal
CA, HTTP/2 by ALPN judged by what was negotiated, the protocol as an axis, and what
cannot be spoken refused before any load with the reason."""

from __future__ import annotations

import os
import re
import shutil
from io import StringIO
from pathlib import Path
from typing import Any

import psutil
import pytest
from django.core.management import call_command

from djbench.launch.live import Deployment
from djbench.reports import guide, words
from djbench.results import store
from djbench.servers import SERVERS, executable_path
from djbench.verdicts.runs import load_run
from tests.resultfiles import entry, write


def _need(tool: str, package: str) -> None:
    if shutil.which(tool) is None and executable_path(tool) is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{tool} is not installed (CI=true: {package})")
        pytest.skip(f"{tool} is not installed ({package})")


def test_the_protocol_is_part_of_the_label() -> None:
    spec = SERVERS["uvicorn"]
    assert Deployment(server=spec, proxy="caddy-tls").label == "uvicorn+caddy-tls"
    assert Deployment(server=spec, proxy="caddy-tls", protocol="h2").label == "uvicorn+caddy-tls/h2"
    assert Deployment(server=spec, protocol="h2c").label == "uvicorn/h2c"


def test_what_cannot_be_spoken_is_refused_before_the_server_starts() -> None:
    from djbench.measure.drivers import DRIVERS
    from djbench.run.variants import driver_refused

    spec = SERVERS["uvicorn"]

    def code(proxy: str, protocol: str) -> str | None:
        found = driver_refused(
            Deployment(server=spec, proxy=proxy, protocol=protocol), DRIVERS["h2load"]
        )
        return found.code if found else None

    assert code("caddy", "h2") == "h2_needs_tls"
    assert code("caddy-tls", "h2c") == "h2c_is_cleartext"
    assert code("caddy-tls", "h2") is code("none", "h2c") is code("caddy-tls", "h1") is None
    # Direct h2 is the server's own TLS: judged by the server's answer once started
    # (Uvicorn has TLS, not HTTP/2), refused at once where it has no TLS at all.
    assert code("none", "h2") is None
    uwsgi = driver_refused(Deployment(server=SERVERS["uwsgi"], protocol="h2"), DRIVERS["h2load"])
    assert uwsgi is not None and uwsgi.code == "no_own_tls"
    assert "no HTTP/2" in words.say(uwsgi)


def test_the_guide_holds_each_front_against_the_one_before(tmp_path: Path) -> None:
    """Six rounds each: plain Caddy, TLS (clearly slower), HTTP/2 over it (the same),
    the server's own h2c (faster); the verdicts are the engine's, paired by round."""
    noise = [1.00, 1.04, 0.96, 1.02, 0.98, 1.00]  # the machine's, shared by a round
    own = {"caddy": 0.01, "caddy-tls": -0.01, "h2": 0.005, "h2c": -0.005, "own": 0.0}
    fronts = [
        ("caddy", "h1", 1000.0, "caddy"), ("caddy-tls", "h1", 800.0, "caddy-tls"),
        ("caddy-tls", "h2", 805.0, "h2"), ("none", "h2c", 1100.0, "h2c"),
        ("none", "h2", 600.0, "own"),
    ]  # fmt: skip
    entries = [
        entry(
            "uvicorn",
            "movies-sync",
            protocol=p,
            proxy=proxy,
            rps=[level * (n + own[tag] * (-1) ** i) for i, n in enumerate(noise)],
        )
        for proxy, p, level, tag in fronts
    ]
    tls = guide.tls_recommendation(load_run(write(tmp_path, "20261201T000000Z-aaaaaa", entries)))
    assert tls is not None
    lines = {line.split(", ", 1)[1].split(":")[0]: line for line in tls.text.splitlines()[1:]}
    assert re.search(
        r"1,0\d\d -> 8\d\d req/s \(paired by round x0\.8\d \[0\.\d\d-0\.\d\d\], slower\)",
        lines["TLS at Caddy"],
    )
    http2 = lines["HTTP/2 instead of HTTP/1.1 over that TLS"]
    assert "the same within 5%" in http2
    assert re.search(
        r"\(paired by round x1\.3\d \[1\.\d\d-1\.\d\d\], faster\)",
        lines["the server's own HTTP/2 in clear (h2c) instead of Caddy's"],
    )
    assert re.search(
        r"805 -> 600 req/s \(paired by round x0\.7\d \[0\.\d\d-0\.\d\d\], slower\)",
        lines["the server's own TLS and HTTP/2 instead of Caddy's"],
    )


def run(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "out"
    call_command(
        "runbench", "--servers", "uvicorn", "--trials", "1", "--duration", "1",
        "--warmup", "0.5", "--ws-idle", "0", "--no-setup", "--output", str(out), *args,
        stdout=StringIO(),
    )  # fmt: skip
    [path] = out.glob("*.json")
    path.rename(tmp_path / f"{path.stem}.done.json")
    document = store.load(tmp_path / f"{path.stem}.done.json")
    pairs: dict[str, Any] = {f"{e.label} {e.scenario}": e for e in document.results}
    pairs["run"] = load_run(tmp_path / f"{path.stem}.done.json")
    return pairs


@pytest.mark.servers
def test_tls_and_http2_through_caddy(live_database: str, tmp_path: Path, one_pass: None) -> None:
    _need("caddy", 'pip install "djbench[caddy]"')
    _need("h2load", "apt-get install nghttp2-client")
    pairs = run(
        tmp_path, "--proxy", "none,caddy-tls", "--protocol", "h1,h2",
        "--scenarios", "health-sync,ws-echo",
    )  # fmt: skip
    # HTTP/2 over TLS, as ALPN chose it, and HTTP/1.1 over the same TLS, one client.
    h2 = pairs["uvicorn+caddy-tls/h2 health-sync"]
    assert h2.status == "ok", h2.reason
    assert h2.driver == "h2load" and h2.trials[0].driver_figures.protocol == "h2"
    assert h2.trials[0].requests > 0 and h2.trials[0].proxy_memory_mb is not None
    h1 = pairs["uvicorn+caddy-tls health-sync"]
    assert h1.status == "ok", h1.reason
    assert h1.trials[0].driver_figures.protocol == "http/1.1"
    assert h1.verify is not None and h1.verify.status == "ok"  # over TLS
    # Refused before any load, with the reason.
    for label, code in (
        ("uvicorn/h2 health-sync", "protocol_refused"),  # its own TLS: HTTP/1.1 only
        ("uvicorn+caddy-tls ws-echo", "websocket_tls_h2"),
        ("uvicorn+caddy-tls/h2 ws-echo", "websocket_tls_h2"),
    ):
        entry = pairs[label]
        assert entry.status == "incompatible" and entry.reason is not None, label
        assert entry.reason.code == code and not entry.trials
    # Caddy's CA and certificate stayed in the run's folder, and Caddy was stopped.
    assert list((tmp_path / "out").rglob("pki/authorities/local/root.crt"))
    left = [
        (p.pid, p.info["cmdline"])
        for p in psutil.process_iter(["cmdline", "status"])
        if p.info["status"] != psutil.STATUS_ZOMBIE  # exited (this container's init reaps late)
        and "Caddyfile.tls" in " ".join(p.info["cmdline"] or [])
    ]
    assert not left
    # The guide holds each step against the one before it, with the engine's verdict.
    tls = guide.tls_recommendation(pairs["run"])
    assert tls is not None and tls.title == "TLS and HTTP/2"
    assert "uvicorn on `health-sync`, TLS at Caddy" not in tls.text  # no plain Caddy here
    assert "uvicorn on `health-sync`, HTTP/2 instead of HTTP/1.1 over that TLS: " in tls.text
    assert "too few rounds to test" in tls.text  # one round: the engine cannot pair
    assert "Caddy peaked at" in tls.text
    assert "### TLS and HTTP/2" in guide.markdown(pairs["run"])


@pytest.mark.servers
@pytest.mark.parametrize("driver", ["builtin", "wrk"])
def test_http1_drivers_speak_tls(
    driver: str, live_database: str, tmp_path: Path, one_pass: None
) -> None:
    _need("caddy", 'pip install "djbench[caddy]"')
    if driver == "wrk":
        _need("wrk", "apt-get install wrk")
    pairs = run(tmp_path, "--proxy", "caddy-tls", "--scenarios", "health-sync", "--driver", driver)
    entry = pairs["uvicorn+caddy-tls health-sync"]
    assert entry.status == "ok", entry.reason
    trial = entry.trials[0]
    assert trial.valid and trial.requests > 0
    assert trial.driver_command is not None
    assert ("--tls" if driver == "builtin" else "https://") in trial.driver_command.shell


def test_a_matrix_cell_reruns_the_protocol_axis() -> None:
    """--matrix reruns runbench in each cell from the option table: the protocols too."""
    from djbench.management.commands.runbench import Command
    from djbench.plan.runplan import RunOptions, from_command
    from djbench.run.cli import cell_argv, job_of

    def parsed(*argv: str) -> RunOptions:
        options = vars(Command().create_parser("manage.py", "runbench").parse_args(argv))
        return from_command(options, job_of(options).name)

    opts = parsed("--proxy", "caddy-tls", "--protocol", "h1,h2")
    again = parsed(*cell_argv(opts))
    assert (again.protocols, again.proxies) == (["h1", "h2"], ["caddy-tls"])
