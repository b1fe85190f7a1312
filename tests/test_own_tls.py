"""A server's own TLS and HTTP/2 (issue 27): the run's CA, each server's flags from the
registry, the probe that judges HTTP/2 by the server's answer, h2load's stall, and a
new connection every N answers (the handshake's cost)."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from cryptography import x509
from django.core.management import call_command
from django.core.management.base import CommandError

from djbench.launch.tls import certificates
from djbench.measure.drivers import h2load
from djbench.measure.h2probe import EMPTY_SETTINGS, spoken
from djbench.results import store
from djbench.servers import SERVERS, LaunchConfig
from tests.slowserver import SlowServer, builtin_load
from tests.test_tls import _need


def config(tmp_path: Path, **more: object) -> LaunchConfig:
    deploy = Path(__file__).resolve().parent.parent / "djbench" / "deploy"
    return LaunchConfig(
        host="127.0.0.1", port=8443, workers=1, threads=None, wsgi_app="p.wsgi:app",
        asgi_app="p.asgi:app", config_file=deploy / "daphne.args", **more,  # type: ignore[arg-type]
    )  # fmt: skip


def test_the_run_ca_signs_a_pkcs8_key_for_the_loopback_names(tmp_path: Path) -> None:
    files = certificates(tmp_path, "10.0.0.5")  # --advertise-host's address too
    assert files.key.read_text().startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8: Granian
    cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    ips = {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    assert ips == {"127.0.0.1", "::1", "10.0.0.5"}
    ssl.create_default_context(cafile=str(files.ca)).load_cert_chain(files.cert, files.key)
    before = files.cert.read_bytes()
    assert certificates(tmp_path) == files and files.cert.read_bytes() == before  # reused


def test_each_server_is_given_its_own_tls_by_its_own_flags(tmp_path: Path) -> None:
    tls = config(tmp_path, tls=("/c/cert.pem", "/c/key.pem"))

    def argv(name: str, cfg: LaunchConfig) -> list[str]:
        spec = SERVERS[name]
        deploy = cfg.config_file.parent / spec.deploy_file
        return spec.launch(LaunchConfig(**{**cfg.__dict__, "config_file": deploy})).argv

    assert "--ssl-certificate" in argv("granian-asgi", tls)
    assert argv("uvicorn", tls)[-5:-1] == [
        "--ssl-certfile",
        "/c/cert.pem",
        "--ssl-keyfile",
        "/c/key.pem",
    ]
    gunicorn = argv("gunicorn-gthread", tls)
    assert gunicorn[gunicorn.index("--http-protocols") + 1] == "h2,h1"
    daphne = argv("daphne", tls)
    # Twisted's endpoint is the only listener: the deploy file's -b/-p are gone.
    assert "-b" not in daphne and "-p" not in daphne
    assert "ssl:8443:interface=127.0.0.1:privateKey=/c/key.pem:certKey=/c/cert.pem" in daphne
    h2c = argv("gunicorn-gthread", config(tmp_path, h2c=True))
    assert h2c[h2c.index("--http2-cleartext") + 1] == "both"  # HTTP/1.1 still served
    assert "--certfile" not in h2c and "--http-protocols" not in argv(
        "gunicorn-gthread", config(tmp_path)
    )
    assert not SERVERS["uwsgi"].own.tls and "HTTP/2" in SERVERS["uwsgi"].own.why


def test_an_older_release_is_refused_with_the_release_that_would_serve() -> None:
    own = SERVERS["gunicorn-gthread"].own
    assert "(24.1.0) has no HTTP/2 over TLS; 25.0 brings it" in (own.refused("24.1.0", "h2") or "")
    assert "26.2 brings it" in (own.refused("26.1.0", "h2c") or "")
    assert own.refused("27.0.1", "h2") is own.refused("27.0.1", "h2c") is None
    assert own.refused(None, "h2") is None  # not installed: said elsewhere


class Answering:
    """A loopback socket that answers its first read with `reply`, then closes."""

    def __init__(self, reply: bytes) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, args=(reply,), daemon=True)
        self.thread.start()

    def _serve(self, reply: bytes) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.recv(1024)
            conn.sendall(reply)

    def close(self) -> None:
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def answering() -> Iterator[list[Answering]]:
    made: list[Answering] = []
    yield made
    for server in made:
        server.close()


def test_http2_is_judged_by_the_servers_answer_to_the_preface(
    answering: list[Answering],
) -> None:
    http2 = Answering(EMPTY_SETTINGS)
    http1 = Answering(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
    answering += [http2, http1]
    assert spoken("127.0.0.1", http2.port, None) == "h2c"
    assert spoken("127.0.0.1", http1.port, None) == (
        "answered 'HTTP/1.1 400 Bad Request' to the HTTP/2 preface"
    )


def test_a_stalled_h2load_run_is_ended_with_its_cause() -> None:
    assert h2load.time_limit(2.0, 0.5) == 0.5 + h2load.WARMUP_S + 2.0 + h2load.STALL_S
    said = h2load.stalled("Main benchmark duration is over\nStopped all clients\n", 32)
    assert "some of its 32 connections were never answered" in said and "gthread" in said
    assert "see its log" in h2load.stalled("starting benchmark...\n", 32)


@pytest.mark.parametrize("every", [1, 4])
def test_a_new_connection_every_n_answers(every: int) -> None:
    with SlowServer(delay=0.002) as server:
        result = builtin_load(server.port, 4, 1.0, warmup=0.2, new_connection_every=every)
    assert result.requests > 50 and not sum(result.errors.values())
    # Every connection closed after its Nth answer (the last of each may be cut short).
    per = server.seen / server.connections
    assert every * 0.9 <= per <= every, (server.seen, server.connections)


def test_new_connections_are_the_builtin_drivers_and_http1s() -> None:
    for argv, said in (
        (["--new-connection-every", "0"], "at least 1"),
        (["--new-connection-every", "2", "--driver", "wrk"], "builtin driver's"),
        (["--new-connection-every", "2", "--protocol", "h2"], "leave out --protocol"),
    ):
        with pytest.raises(CommandError, match=said):
            call_command("runbench", *argv, stdout=StringIO())


@pytest.mark.servers
def test_a_servers_own_tls_and_http2(live_database: str, tmp_path: Path, one_pass: None) -> None:
    _need("h2load", "apt-get install nghttp2-client")
    out = tmp_path / "out"
    call_command(
        "runbench", "--servers", "granian-asgi,gunicorn-sync,uwsgi", "--protocol", "h2",
        "--scenarios", "health-sync", "--trials", "1", "--duration", "1", "--warmup", "0.5",
        "--no-setup", "--output", str(out), stdout=StringIO(),
    )  # fmt: skip
    [path] = out.glob("*.json")
    pairs = {e.label: e for e in store.load(path).results}
    granian = pairs["granian-asgi/h2"]
    assert granian.status == "ok", granian.reason
    assert granian.trials[0].driver_figures.protocol == "h2" and granian.trials[0].requests > 0
    assert granian.verify is not None and granian.verify.status == "ok"  # checked by the CA
    assert "--ssl-certificate" in granian.command["server"].argv
    # Gunicorn's sync worker takes the flags, lets ALPN choose h2, then speaks HTTP/1.1.
    sync = pairs["gunicorn-sync/h2"]
    assert sync.status == "incompatible" and sync.reason is not None, sync.status
    assert sync.reason.code == "protocol_refused" and not sync.trials
    assert "h2 by ALPN, then answered 'HTTP/1.1 400" in sync.reason.params["got"]
    assert "gthread, gevent and asgi workers" in sync.reason.params["hint"]
    uwsgi = pairs["uwsgi/h2"]
    assert uwsgi.reason is not None and uwsgi.reason.code == "no_own_tls"
    assert list(out.rglob("tls/ca.pem"))  # the run's CA, in the run's folder
