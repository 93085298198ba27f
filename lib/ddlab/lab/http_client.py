"""ddlab's HTTP clients, with one TLS context per process.

httpx builds a new TLS context for every client, and ``httpx.get`` makes a client per
call: loading certifi's CA bundle costs about 28 ms of CPU each time (2-core VM,
2026-12-05), though what ddlab polls on ``local`` and through its tunnels is plain HTTP
on loopback. A poll every 0.2 s spent a seventh of a core on it. Here the context is
built once, the first time a client is made, exactly as httpx builds its default one
(``SSL_CERT_FILE``, else ``SSL_CERT_DIR``, else certifi's bundle), so an ``https://``
server is verified as before; a process that changes those variables after its first
request keeps the first answer.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default verifying context, built once per process."""
    return httpx.create_ssl_context()


def client(**kwargs) -> httpx.Client:
    """``httpx.Client(**kwargs)`` sharing the process's TLS context."""
    return httpx.Client(verify=tls_context(), **kwargs)


def get(url: str, **kwargs) -> httpx.Response:
    """``httpx.get`` without a TLS context of its own."""
    return httpx.get(url, verify=tls_context(), **kwargs)


def post(url: str, **kwargs) -> httpx.Response:
    """``httpx.post`` without a TLS context of its own."""
    return httpx.post(url, verify=tls_context(), **kwargs)
