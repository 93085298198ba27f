"""ddlab's HTTP clients share one TLS context per process, and HTTPS is verified as httpx
verifies it: against a real server on loopback (plain HTTP, and HTTPS with a certificate
made here), each check in a fresh interpreter, since the context lives as long as its
process."""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import os
import ssl
import subprocess
import sys
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture
def serve():
    servers = []

    def start(tls: ssl.SSLContext | None = None) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
        if tls is not None:
            server.socket = tls.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _self_signed(folder) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and its key, as PEM files in ``folder``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_file), str(key_file)


def _python(code: str, **env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**environ, **env})


COUNT_LOADS = """
import ssl
loads = []
_load = ssl.SSLContext.load_verify_locations
def counted(self, *a, **k):
    loads.append(1)
    return _load(self, *a, **k)
ssl.SSLContext.load_verify_locations = counted
from ddlab.lab import http_client
"""


def test_clients_gets_and_posts_build_one_tls_context_between_them(serve):
    url = serve()
    out = _python(COUNT_LOADS + f"""
for _ in range(3):
    with http_client.client(timeout=5) as c:
        assert c.get({url!r}).text == "hello"
    assert http_client.get({url!r}, timeout=5).status_code == 200
    assert http_client.post({url!r}, json={{}}, timeout=5).status_code == 200
print(len(loads))
""")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1"], f"CA bundle loads for 9 requests: {out.stdout} (one per client before)"


def test_https_is_verified_as_httpx_verifies_it(serve, tmp_path):
    cert, key = _self_signed(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    url = serve(tls)
    ask = f"""
import httpx
from ddlab.lab import http_client
try:
    print(http_client.get({url!r}, timeout=5).text)
except httpx.ConnectError as err:
    print("refused:", err)
"""
    unknown = _python(ask)
    assert unknown.returncode == 0, unknown.stderr
    assert unknown.stdout.startswith("refused:") and "CERTIFICATE_VERIFY_FAILED" in unknown.stdout, unknown.stdout
    trusted = _python(ask, SSL_CERT_FILE=cert)
    assert trusted.stdout.strip() == "hello", trusted.stdout + trusted.stderr
