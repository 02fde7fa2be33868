"""`LoopbackTls`: an https front for a loopback site (`LoopbackWeb`), with a throwaway
certificate authority a test hands to the client (`ca_file`).

Why: Claude Code's WebFetch upgrades every http url to https (2.1.197), so a plain-http
loopback site cannot be fetched by it; behind this front the same pages are served as
`https://127.0.0.1:PORT/...` and the CLI trusts them through `NODE_EXTRA_CA_CERTS=ca_file`.
Each TLS connection is relayed byte for byte to the site, so `LoopbackWeb.hits` still counts
every page served. Needs `cryptography` (installed with the `mcp` extra, through PyJWT).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import socket
import ssl
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

__all__ = ["LoopbackTls"]


def _write_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a leaf for 127.0.0.1 / localhost valid for a day: (ca, cert, key) files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "agentport test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                          content_commitment=False, key_encipherment=False,
                          data_encipherment=False, key_agreement=False,
                          encipher_only=False, decipher_only=False),
            critical=True,
        )
        # key identifiers: Python 3.13's default VERIFY_X509_STRICT refuses a chain without
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    san = x509.SubjectAlternativeName(
        [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    )
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
        .add_extension(san, critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    pem = serialization.Encoding.PEM
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    ca_file.write_bytes(ca.public_bytes(pem))
    cert_file.write_bytes(leaf.public_bytes(pem))
    key_file.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return ca_file, cert_file, key_file


class LoopbackTls:
    """An https front on 127.0.0.1 for the plain-http site at *target* (a base url such as
    `LoopbackWeb.base_url`). A context manager; `base_url` is `https://127.0.0.1:PORT`,
    `ca_file` the PEM of the CA that signed its certificate (for `NODE_EXTRA_CA_CERTS`,
    `SSL_CERT_FILE`, `ssl.create_default_context(cafile=...)`)."""

    def __init__(self, target: str, *, connect_timeout: float = 10.0) -> None:
        parts = urlsplit(target)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise ValueError(f"target must be http://host:port, got {target!r}")
        self._target = (parts.hostname, parts.port)
        self._timeout = connect_timeout
        self._dir = tempfile.TemporaryDirectory(prefix="agentport-tls-")
        self._sock: socket.socket | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.ca_file: Path = Path(self._dir.name) / "ca.pem"

    @property
    def base_url(self) -> str:
        if self._sock is None:
            raise RuntimeError("LoopbackTls is not started")
        return f"https://127.0.0.1:{self._sock.getsockname()[1]}"

    def url(self, path: str) -> str:
        return self.base_url + (path if path.startswith("/") else "/" + path)

    def start(self) -> Self:
        ca, cert, key = _write_certificates(Path(self._dir.name))
        self.ca_file = ca
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._context = context
        sock = socket.create_server(("127.0.0.1", 0))
        sock.settimeout(0.2)
        self._sock = sock
        thread = threading.Thread(target=self._accept, name="LoopbackTls", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.close()
        for thread in self._threads:
            thread.join(2.0)
        if self._sock is not None:
            self._sock.close()
        self._dir.cleanup()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _accept(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                client, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _track(self, *socks: socket.socket) -> None:
        with self._lock:
            self._conns.update(socks)

    def _serve(self, client: socket.socket) -> None:
        client.settimeout(self._timeout)
        self._track(client)
        try:
            tls = self._context.wrap_socket(client, server_side=True)
            upstream = socket.create_connection(self._target, timeout=self._timeout)
        except OSError:
            client.close()
            return
        self._track(tls, upstream)
        tls.settimeout(None)
        upstream.settimeout(None)
        back = threading.Thread(target=_pipe, args=(upstream, tls), daemon=True)
        back.start()
        _pipe(tls, upstream)
        back.join(5.0)
        for s in (tls, upstream):
            with contextlib.suppress(OSError):
                s.close()
        with self._lock:
            self._conns.difference_update({client, tls, upstream})


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    """Copy *src* to *dst* until either side closes."""
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)
