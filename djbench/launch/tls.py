"""A run's own certificate authority, for servers that terminate TLS themselves
(`--proxy none --protocol h2`, issue 27).

Written with `cryptography` (trustme does this for tests, but is not among the packages
djbench may depend on): a CA and one server certificate for 127.0.0.1, ::1, localhost
and the run's --advertise-host, both ECDSA P-256 as Caddy's internal CA issues them, so
that a server's own TLS and Caddy's do the same handshake work. Everything is written
in the run's folder; nothing is installed into the system's trust store, and clients
check the server against `ca.pem` alone.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

FOLDER = "tls"
VALID_DAYS = 7  # a run's certificate: long enough for a soak, short by design
CA_USAGE = {
    "digital_signature": True,
    "key_cert_sign": True,
    "crl_sign": True,
    **dict.fromkeys(
        ("content_commitment", "key_encipherment", "data_encipherment", "key_agreement",
         "encipher_only", "decipher_only"),
        False,
    ),
}  # fmt: skip


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the CA's certificate: what clients trust
    cert: Path  # the server's certificate (PEM)
    key: Path  # its private key, PEM PKCS#8 (Granian reads no other format)


def files_in(run_dir: Path) -> TlsFiles:
    folder = run_dir / FOLDER
    return TlsFiles(folder / "ca.pem", folder / "server.pem", folder / "server.key")


def certificates(run_dir: Path, host: str = "127.0.0.1") -> TlsFiles:
    """The run's CA and server certificate, made on first use and reused after; valid
    for the loopback names and `host` (--advertise-host: the same for the whole run)."""
    found = files_in(run_dir)
    if found.ca.exists() and found.cert.exists() and found.key.exists():
        return found
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=VALID_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "djbench run CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(**CA_USAGE), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    for address in dict.fromkeys(["127.0.0.1", "::1", host]):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(address)))
        except ValueError:  # a host name
            names.append(x509.DNSName(address))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    found.ca.parent.mkdir(parents=True, exist_ok=True)
    pem = serialization.Encoding.PEM
    found.key.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    found.key.chmod(0o600)
    found.cert.write_bytes(cert.public_bytes(pem))
    found.ca.write_bytes(ca.public_bytes(pem))
    return found
