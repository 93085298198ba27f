"""A local TCP port that forwards to a port on an SSH host, or one it reaches (``ssh -L``).

``Forwarder(open_channel, port)`` listens on 127.0.0.1 at an ephemeral port;
each accepted connection gets its own ``direct-tcpip`` channel from
``open_channel(port, peer)`` (a channel to the host's 127.0.0.1:port, or to a
name the host resolves, such as a Slurm job's node) and a pump thread copying bytes both ways
(half-closes passed on). ``open_channel`` is asked per connection, so a
transport that reconnected serves the next connection. Why in-process and
not ``ssh -L``: it rides the one verified, persistent connection and dies
with it, with no extra process to leak.
"""

from __future__ import annotations

import logging
import select
import socket
import threading

__all__ = ["Forwarder"]

log = logging.getLogger("ddlab.tunnel")


class Forwarder:
    """127.0.0.1:``local_port`` here -> ``port`` where ``open_channel`` leads (the host's
    127.0.0.1, or a node it reaches); ``close()`` ends all."""

    def __init__(self, open_channel, port: int, *, name: str = "host"):
        self._open_channel = open_channel
        self.port = port
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.local_port = self._listener.getsockname()[1]
        self.closed = False
        self._lock = threading.Lock()
        self._open: set = set()
        threading.Thread(target=self._accept, daemon=True,
                         name=f"ddlab-tunnel-{name}-{port}").start()

    def close(self) -> None:
        """Stop listening and close every forwarded connection."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            ends = list(self._open)
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept() on Linux
        except OSError:
            pass
        self._listener.close()
        for end in ends:
            end.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn, peer), daemon=True).start()

    def _serve(self, conn: socket.socket, peer) -> None:
        try:
            chan = self._open_channel(self.port, peer)
        except Exception as exc:  # any failure: refuse this connection, keep listening
            # debug, not warning: while a server starts, every ready check is refused
            log.debug("tunnel to port %d: cannot open a channel: %s", self.port, exc)
            conn.close()
            return
        with self._lock:
            if self.closed:
                conn.close()
                chan.close()
                return
            self._open.update((conn, chan))
        try:
            _pump(conn, chan)
        finally:
            with self._lock:
                self._open.difference_update((conn, chan))
            conn.close()
            chan.close()


def _pump(conn: socket.socket, chan) -> None:
    """Copy both ways until both directions reached EOF (or either side broke)."""
    reading = {conn: chan, chan: conn}
    while reading:
        try:
            ready, _, _ = select.select(list(reading), [], [], 5.0)
            for src in ready:
                data = src.recv(1 << 16)
                dst = reading[src]
                if data:
                    dst.sendall(data)
                    continue
                del reading[src]
                if dst is conn:
                    conn.shutdown(socket.SHUT_WR)
                else:
                    chan.shutdown_write()
        except (OSError, EOFError, ValueError):
            return
        if getattr(chan, "closed", False) and chan not in reading and conn not in reading:
            return
