"""Free ports for the tests' servers, outside the kernel's ephemeral range.

``bind(("127.0.0.1", 0))`` gets a port from ``net.ipv4.ip_local_port_range``, the
range the kernel also takes source ports from for outgoing connections. Between a
test choosing such a port and its server binding it, any client connection of
another xdist worker (an HTTP request, an SSH session, a tunnel) may take it as its
source port, and the server dies with ``address already in use``: CI saw a test that
expected ``kv_pool_oom`` get ``port_in_use`` that way. The ports handed out here lie
outside that range, in a slice of their own per xdist worker (so two workers never
pick the same one), are checked free by binding them, and are not handed out twice
by one process.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

_SLICES = 16           # xdist workers gw0..gw15 get a slice each; more wrap around
_lock = threading.Lock()
_handed: set[int] = set()
_next: dict[tuple[int, int], int] = {}


def _ephemeral() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def _pool() -> tuple[int, int]:
    """The non-ephemeral ports the tests may use: [start, stop)."""
    low, high = _ephemeral()
    if low - 10000 >= 4000:
        return 10000, low
    return high + 1, 65536


def _worker() -> int:
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    digits = "".join(ch for ch in name if ch.isdigit())
    return int(digits or 0) % _SLICES


def _is_free(port: int, host: str) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(count: int = 1, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct free ports of this worker's slice (``host="0.0.0.0"`` checks
    every address, for a daemon that binds them all)."""
    start, stop = _pool()
    size = (stop - start) // _SLICES
    first = start + _worker() * size
    key = (first, size)
    ports: list[int] = []
    with _lock:
        offset = _next.get(key, os.getpid() % size)
        for lap in range(2):  # a whole slice handed out: its ports may be given again
            if lap:
                _handed.difference_update(range(first, first + size))
            for _ in range(size):
                port = first + offset
                offset = (offset + 1) % size
                if port not in _handed and port not in ports and _is_free(port, host):
                    _handed.add(port)
                    ports.append(port)
                    if len(ports) == count:
                        _next[key] = offset
                        return ports
    raise RuntimeError(f"no {count} free ports left in {first}-{first + size - 1}")


def free_port(host: str = "127.0.0.1") -> int:
    """One free port of this worker's slice, never handed out before by this process."""
    return free_ports(1, host)[0]
