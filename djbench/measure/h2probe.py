"""Whether a front end really speaks HTTP/2, judged before any load (issue 27).

A flag proves nothing: Gunicorn 27's sync worker takes `--http-protocols h2,h1`, lets
ALPN choose h2, then reads the HTTP/2 preface as a bad HTTP/1.1 request line. So the
probe offers h2 and http/1.1 by ALPN (over TLS), sends the client preface and an empty
SETTINGS frame (RFC 9113 §3.4), and counts HTTP/2 as spoken only when the first bytes
back are a SETTINGS frame. Written by hand: nine bytes of frame header need no HTTP/2
library (h2load, which loads afterwards, checks the rest).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from pathlib import Path

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # length 0, type 4, stream 0
SETTINGS = 0x4


def spoken(host: str, port: int, cafile: Path | None, timeout: float = 5.0) -> str:
    """ "h2" (over TLS) or "h2c" (in clear) when the server answers the preface with
    SETTINGS; otherwise what it did instead, in words. Raises OSError when no
    connection (or no TLS handshake) completes."""
    with socket.create_connection((host, port), timeout=timeout) as raw:
        if cafile is None:
            return _answer(raw, "h2c")
        context = ssl.create_default_context(cafile=str(cafile))
        context.set_alpn_protocols(["h2", "http/1.1"])
        with context.wrap_socket(raw, server_hostname=host) as tls:
            chosen = tls.selected_alpn_protocol()
            if chosen is None:
                return "HTTP/1.1 only: its TLS chose no protocol by ALPN"
            if chosen != "h2":
                return f"{chosen}, chosen by ALPN"
            return _answer(tls, "h2")


def _answer(sock: socket.socket, name: str) -> str:
    sock.sendall(PREFACE + EMPTY_SETTINGS)
    data = b""
    while len(data) < 9:
        try:
            chunk = sock.recv(9 - len(data))
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    if len(data) == 9 and data[3] == SETTINGS:
        return name
    with contextlib.suppress(OSError):
        data += sock.recv(200)  # the rest of an HTTP/1.1 status line, if any
    first = data.split(b"\r\n", 1)[0].decode("latin-1").strip()
    said = f"answered {first!r}" if first else "no answer"
    return f"{'h2 by ALPN, then ' if name == 'h2' else ''}{said} to the HTTP/2 preface"
