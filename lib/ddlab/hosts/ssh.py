"""The SSH transport: one persistent, verified paramiko connection per host.

Why not a fresh ``ssh`` per command: that costs a TCP + key exchange + auth
+ login shell every time (about 0.3-0.6 s on loopback), which is what made the
old bash polling loop slow and blind. Here one connection carries every
command (about 1-10 ms each through the agent below), SFTP and the HTTP
tunnel, so a watcher can poll a service every 0.2 s.

Contract (on top of :class:`ddlab.hosts.transport.Transport`'s):

- ``~/.ssh/config`` (or the profile's ``ssh_config``) is honoured for
  HostName, User, Port, IdentityFile, UserKnownHostsFile and ProxyJump; the
  profile's own keys win. ProxyJump hops are reached through ``direct-tcpip``
  channels of the previous hop, each verified like the target.
- Host keys are checked against ``known_hosts`` (the profile's, else the ssh
  config's, else ``~/.ssh/known_hosts``). An unknown key is refused with
  :class:`HostKeyError` saying how to trust it; ``trust_on_first_use: true``
  records it instead. A changed key is always refused, loudly.
- Commands go to a small agent (:mod:`ddlab.hosts.remote_exec`) started once per
  connection with the profile's ``python``: sshd would otherwise start the
  login shell (and its ``~/.bashrc``) for every command. The agent runs argv
  lists with ``subprocess`` — no shell — and kills a command's process group
  at its timeout. Where the agent cannot start, each command runs on its own
  channel as ``shlex.join(["timeout", "-k", "2", T, *argv])``, so a hung
  command is still killed on the host. Either way this side gives up a few
  seconds after the timeout.
- A connection found dropped is reopened; a command whose connection drops is
  run once more on a new connection, then :class:`HostError`. Commands should
  therefore be safe to repeat (ddlab's are: state queries, idempotent starts).
  Reconnecting keeps trying for ``connect_timeout_s`` from the drop while the
  host refuses or does not answer (sshd restarting, a network blip: it was
  there a moment ago); one window per command, never nested. The first
  connection fails at once, and a refused key or login never retries. Once
  the window ran out, the host is *down* for this transport
  (``down_since``): each later command makes one attempt, not a new window,
  and tunnels refuse at once, so what runs after the loss ends in bounded
  time; a command that gets through again ends it.
"""

from __future__ import annotations

import functools
import logging
import select
import shlex
import socket
import threading
import time

import paramiko

from ddlab.core.errors import HostError
from ddlab.core.progress import Heartbeat
from ddlab.hosts.profiles import HostProfile
from ddlab.hosts.remote_exec import AgentClient, AgentLost, AgentUnavailable, Capped
from ddlab.hosts.remote_exec import source as agent_source
from ddlab.hosts.ssh_trust import (
    Hop,
    check_identity_files,
    UnknownKeyPolicy,
    changed_key_error,
    known_hosts_path,
    load_ssh_config,
    resolve_hops,
)
from ddlab.hosts.transport import Completed, Transport, command_error, url_host
from ddlab.hosts.tunnels import Forwarder

__all__ = ["SSHTransport"]

log = logging.getLogger("ddlab.ssh")
# paramiko reports every refused tunnel channel ("Secsh channel N open FAILED") at
# ERROR; a ready check against a starting server is refused by design, so keep
# paramiko's own chatter to critical problems. ddlab raises its own errors.
logging.getLogger("paramiko.transport").setLevel(logging.CRITICAL)
_KILL_GRACE_S = 2
_CLIENT_GRACE_S = 5
_NETWORK_ERRORS = (paramiko.SSHException, EOFError, OSError)


class _Lost(Exception):
    """The connection dropped under an operation (retried by the caller, bounded)."""


def _closed_by_peer(exc: BaseException) -> bool:
    """Whether ``exc`` (paramiko wraps the socket's error) comes from the peer closing a connection
    it had accepted: a reset, or an end of stream before its banner (paramiko 5.1's banner read
    raises EOFError when recv returns nothing, packet.py ``_read_timeout``; a silent port times
    out instead)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (ConnectionResetError, EOFError)) or "reset by peer" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class SSHTransport(Transport):
    """A host over SSH; connects on first use, reconnects when the connection drops.

    ``connects`` counts connections opened (1 for a healthy session).
    """

    def __init__(self, profile: HostProfile, *, agent: bool = True):
        super().__init__(profile)
        self.use_agent = agent
        self._agent: AgentClient | None = None
        self._agent_transport = None
        self._config = load_ssh_config(profile.ssh_config)
        self.hops = resolve_hops(profile, self._config)
        self._lock = threading.RLock()
        # paramiko's SFTPClient takes the next reply off the channel whichever thread asked:
        # with two threads at once (the lock's heartbeat beside a run's own reads) one took
        # the other's reply, and the other waited for ever; one SFTP request at a time
        self._sftp_lock = threading.RLock()
        self._clients: list[paramiko.SSHClient] = []
        self._sftp: paramiko.SFTPClient | None = None
        self._home: str | None = None
        self._tunnels: dict[tuple[str, int], Forwarder] = {}
        self.connects = 0
        self._dropped_at: float | None = None  # when a dead link was first noticed
        self._window = threading.local()  # this thread's reconnect deadline, in _retrying

    # -- the connection ----------------------------------------------------------------

    def open(self, timeout_s: float | None = None) -> paramiko.Transport:
        """The live paramiko transport to the target, (re)connecting when needed: one
        attempt (``_retrying`` owns the window), no longer than what is left of it. A
        reconnect after a drop beats while it waits, as ``_retrying``'s later attempts do."""
        with self._lock:
            if self._clients:
                current = self._clients[-1].get_transport()
                if current is not None and current.is_active():
                    return current
                if self._dropped_at is None:
                    self._dropped_at = time.monotonic()
                    log.info("%s: connection dropped; reconnecting", self.profile.label)
            dropped_at = self._dropped_at
            self._drop()
            check_identity_files(self.hops, self.profile.name)  # a wrong key file: one error, never retried
            start = time.monotonic()
            timeout_s = timeout_s or self._attempt_timeout_s()
            if dropped_at is None or getattr(self._window, "beat", None) is not None:
                self._clients = self._open_chain(timeout_s)
            else:  # a drop seen here, before _retrying saw any: this attempt can block for the window too
                beat = self._reconnect_beat(dropped_at)
                try:
                    with beat.ticking("waiting for the host to answer"):
                        self._clients = self._open_chain(timeout_s)
                finally:
                    beat.close("connected again" if self._clients else "no answer")
            self.connects += 1
            self._dropped_at = None
            log.info("%s: connected via %s in %.0f ms", self.profile.label,
                     " -> ".join(map(str, self.hops)), 1000 * (time.monotonic() - start))
            return self._clients[-1].get_transport()

    @property
    def link(self) -> tuple:
        """(connections opened, whether the current one is up): see Transport.link."""
        with self._lock:
            current = self._clients[-1].get_transport() if self._clients else None
            return self.connects, bool(current is not None and current.is_active())

    def close(self) -> None:
        with self._lock:
            for tunnel in self._tunnels.values():
                tunnel.close()
            self._tunnels.clear()
            self._drop()

    def _drop(self) -> None:
        """Let go of the link. A link that died before paramiko's reader saw it fails the
        channel closes it still sends (EOFError, a socket error): nothing is left to close
        then, and the drop is the reconnect's first step and every error path's last, so it
        never raises (it would hide the error it cleans up after)."""
        with self._lock:
            for part in (self._agent, self._sftp, *reversed(self._clients)):
                if part is not None:
                    try:
                        part.close()
                    except (EOFError, OSError, paramiko.SSHException):
                        pass
            self._sftp = self._agent = None
            self._clients = []

    def _reconnect_beat(self, since: float) -> Heartbeat:
        """The heartbeat of a reconnect window that opened at ``since`` (its elapsed time counts from it)."""
        return Heartbeat(f"{self.profile.label}: reconnecting", self.profile.connect_timeout_s, interval_s=1.0,
                         started=since)

    def _attempt_timeout_s(self) -> float:
        """connect_timeout_s, or inside a reconnect window what is left of it (1 s at
        least): an attempt never outlasts the window by more than a second."""
        deadline = getattr(self._window, "deadline", None)
        full = self.profile.connect_timeout_s
        return full if deadline is None else min(full, max(1.0, deadline - time.monotonic()))

    def _open_chain(self, timeout_s: float) -> list[paramiko.SSHClient]:
        clients: list[paramiko.SSHClient] = []
        try:
            for hop in self.hops:
                sock = self._socket_to(hop, clients[-1] if clients else None, timeout_s)
                clients.append(self._handshake(hop, sock, timeout_s))
        except BaseException:
            for client in reversed(clients):
                client.close()
            raise
        clients[-1].get_transport().set_keepalive(15)
        return clients

    def _socket_to(self, hop: Hop, via: paramiko.SSHClient | None, timeout: float):
        try:
            if via is None:
                sock = socket.create_connection((hop.hostname, hop.port), timeout=timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # small request/reply
                return sock
            return via.get_transport().open_channel("direct-tcpip", (hop.hostname, hop.port),
                                                    ("127.0.0.1", 0), timeout=timeout)
        except _NETWORK_ERRORS as exc:
            raise HostError(f"{hop}: cannot connect ({str(exc) or type(exc).__name__})",
                            fix="check that the host is up and sshd listens there: "
                                + shlex.join(["ssh", "-p", str(hop.port),
                                              f"{hop.user}@{hop.hostname}", "true"]),
                            host=self.profile.name, transient=True) from None

    def _handshake(self, hop: Hop, sock, timeout: float) -> paramiko.SSHClient:
        known = known_hosts_path(self.profile, self._config)
        client = paramiko.SSHClient()
        if known.is_file():
            client.get_host_keys().load(str(known))
        client.set_missing_host_key_policy(UnknownKeyPolicy(self.profile, hop, known))
        try:
            client.connect(hop.hostname, port=hop.port, username=hop.user, sock=sock,
                           key_filename=list(hop.identity_files) or None,
                           look_for_keys=not hop.identity_files, allow_agent=True,
                           timeout=timeout, banner_timeout=timeout, auth_timeout=timeout,
                           channel_timeout=timeout)
            return client
        except BaseException as exc:
            link = client.get_transport()
            dropped = link is None or not link.is_active()  # paramiko says "auth failed" then too
            # reached: it sent a banner, or it accepted the TCP connection and then closed or
            # reset it (an sshd whose session was killed under the handshake, before or after
            # its banner; a host that is down refuses or times out in _open_socket instead)
            answered = bool(link is not None and getattr(link, "remote_version", None)) \
                or _closed_by_peer(exc)
            client.close()
            sock.close()
            if isinstance(exc, paramiko.BadHostKeyException):
                raise changed_key_error(self.profile, hop, known, exc) from None
            if isinstance(exc, paramiko.AuthenticationException) and not dropped:
                raise HostError(f"{hop}: authentication refused ({exc})",
                                fix=f"check user and identity_file (tried: "
                                    f"{', '.join(hop.identity_files) or 'agent and default keys'}); "
                                    "an encrypted key must be loaded with ssh-add",
                                host=self.profile.name) from None
            if isinstance(exc, _NETWORK_ERRORS) and not isinstance(exc, HostError):
                raise HostError(f"{hop}: SSH handshake failed ({str(exc) or type(exc).__name__})",
                                fix="check that an sshd answers there", host=self.profile.name,
                                transient=True, reached=answered) from None
            raise

    def _retrying(self, what: str, operation):
        """Run operation(); while the connection drops under it, reconnect and run it again,
        for at most ``connect_timeout_s`` from the first drop (a reconnect that fails on
        the way counts as a drop too): a flaky link is ridden out, a dead one is not. A
        host never reached fails at once: there was no connection to lose. Never silent:
        the first drop is logged and a heartbeat says how long it has been trying."""
        first_loss, losses, beat = None, 0, None
        try:
            while True:
                try:
                    if beat is None:
                        done = operation()
                    else:  # one attempt can block for the whole window: beat meanwhile
                        with beat.ticking(f"attempt {losses + 1} for {what}: waiting for "
                                          "the host to answer"):
                            done = operation()
                    self.down_since = None
                    return done
                except (_Lost, HostError) as exc:
                    # a host never reached fails at once; an sshd that answered and then
                    # dropped the handshake (a session killed under it) is a drop like any other
                    if isinstance(exc, HostError) and not (
                            getattr(exc, "transient", False)
                            and (self.connects > 0 or getattr(exc, "reached", False))):
                        raise
                    losses += 1
                    self._drop()
                    if self.down_since is not None:  # one attempt, not another window
                        raise HostError(
                            f"{self.profile.label}: still not answering "
                            f"{time.monotonic() - self.down_since:.0f} s after the connection "
                            f"was lost; {what} did not run (last: {exc})",
                            fix="check the host and its sshd", host=self.profile.name,
                            transient=True) from None
                    if beat is None:  # the window starts when the drop was first seen
                        first_loss = min(time.monotonic(), self._dropped_at or float("inf"))
                        self._window.deadline = first_loss + self.profile.connect_timeout_s
                        log.warning("%s: connection lost during %s (%s); reconnecting for up "
                                    "to %g s", self.profile.label, what, exc,
                                    self.profile.connect_timeout_s)
                        beat = self._window.beat = self._reconnect_beat(first_loss)
                    waited_s = time.monotonic() - first_loss
                    if waited_s >= self.profile.connect_timeout_s:
                        self.down_since = time.monotonic()
                        raise HostError(
                            f"{self.profile.label}: connection lost {losses} times in "
                            f"{waited_s:.0f} s during {what} (last: {exc})",
                            fix="check the host and its sshd; the command may have run partly",
                            host=self.profile.name, transient=True) from None
                    beat.beat(f"attempt {losses + 1} for {what} (last: {str(exc)[:80]})")
                    time.sleep(min(0.1 * losses, 1.0))
        finally:
            self._window.deadline = self._window.beat = None
            if beat is not None:
                beat.close("connected again" if self._clients else "gave up")

    def _lost_or_raise(self, exc: BaseException):
        """Turn a network error into _Lost when the connection is gone; else re-raise it.

        An EOFError is a channel closed under us: lost too, even while paramiko's
        transport thread has not yet noticed that the socket is gone."""
        transport = self._clients[-1].get_transport() if self._clients else None
        if isinstance(exc, EOFError) or transport is None or not transport.is_active():
            raise _Lost(str(exc) or type(exc).__name__) from exc
        raise exc

    # -- commands --------------------------------------------------------------------

    def _run(self, argv, data, timeout_s):
        return self._retrying(shlex.join(argv[:3]), lambda: self._exec(argv, data, timeout_s))

    def _exec(self, argv: list[str], data: bytes | None, timeout_s: float) -> Completed:
        transport = self.open()
        agent = self._agent_on(transport)
        if agent is None:
            return self._exec_channel(transport, argv, data, timeout_s)
        start = time.monotonic()
        try:
            code, out, err, timed_out, skipped = agent.call(
                argv, data, timeout_s, timeout_s + _KILL_GRACE_S + 2 * _CLIENT_GRACE_S)
        except AgentLost as exc:
            raise _Lost(f"command agent gone: {exc}") from None
        except TimeoutError:
            agent.close()  # unresponsive: the next command starts a fresh one
            code, out, err, timed_out, skipped = 128 + 9, b"", b"", True, ((0, 0), (0, 0))
        done = Completed.read(argv, code, out, err, time.monotonic() - start, skipped)
        if timed_out:
            raise command_error(self.profile, done, timed_out=True, timeout_s=timeout_s)
        return done

    def _agent_on(self, transport: paramiko.Transport) -> AgentClient | None:
        """The running agent on this connection, started on first use; None: use exec."""
        with self._lock:
            if not self.use_agent:
                return None
            if self._agent is not None and not self._agent.dead and self._agent_transport is transport:
                return self._agent
            try:
                chan = transport.open_session(timeout=self.profile.connect_timeout_s)
                chan.set_combine_stderr(True)
                chan.exec_command(shlex.join([self.profile.python, "-u", "-c", agent_source()]))
                self._agent = AgentClient(chan, hello_timeout_s=max(15.0, self.profile.connect_timeout_s))
                self._agent_transport = transport
                return self._agent
            except AgentUnavailable as exc:
                if not transport.is_active():
                    raise _Lost(str(exc)) from None
                log.warning("%s: the command agent did not start with python=%s (%s); running "
                            "each command through the login shell instead (slower)",
                            self.profile.label, self.profile.python, exc)
                self.use_agent = False
                return None
            except _NETWORK_ERRORS as exc:
                self._lost_or_raise(exc)

    def _exec_channel(self, transport, argv: list[str], data: bytes | None,
                      timeout_s: float) -> Completed:
        command = shlex.join(["timeout", "-k", str(_KILL_GRACE_S), f"{timeout_s:g}", *argv])
        start = time.monotonic()
        try:
            chan = transport.open_session(timeout=self.profile.connect_timeout_s)
            chan.exec_command(command)
        except _NETWORK_ERRORS as exc:
            self._lost_or_raise(exc)
        with chan:
            if data:
                threading.Thread(target=_feed, args=(chan, data), daemon=True).start()
            else:
                chan.shutdown_write()
            out, err, finished = _collect(chan, start + timeout_s + _KILL_GRACE_S + _CLIENT_GRACE_S)
            code = chan.exit_status
        (out, out_skipped), (err, err_skipped) = out.value(), err.value()
        done = Completed.read(argv, code, out, err, time.monotonic() - start,
                              (out_skipped, err_skipped))
        if finished and code == -1 and not transport.is_active():
            raise _Lost("connection closed before the command's exit status")
        if not finished or (code in (124, 137) and done.elapsed_s >= timeout_s):
            raise command_error(self.profile, done, timed_out=True, timeout_s=timeout_s)
        return done

    # -- files and ports -------------------------------------------------------------

    def _sftp_client(self) -> paramiko.SFTPClient:
        with self._lock:
            transport = self.open()
            channel = self._sftp.get_channel() if self._sftp else None
            if channel is None or channel.closed or channel.get_transport() is not transport:
                try:
                    self._sftp = paramiko.SFTPClient.from_transport(transport)
                except _NETWORK_ERRORS as exc:
                    self._lost_or_raise(exc)
                # a reply that never comes is bounded, as every command is
                self._sftp.get_channel().settimeout(self.profile.command_timeout_s)
            return self._sftp

    def _sftp_op(self, what: str, operation):
        def attempt():
            with self._sftp_lock:  # one request at a time (see __init__)
                sftp = self._sftp_client()
                try:
                    return operation(sftp)
                except TimeoutError as exc:  # no reply within the bound: this session is done
                    self._sftp = None
                    raise _Lost(f"no SFTP reply within {self.profile.command_timeout_s:g} s "
                                f"during {what}") from exc
                except (paramiko.SSHException, EOFError, socket.error) as exc:
                    self._lost_or_raise(exc)
        return self._retrying(what, attempt)

    def write_file(self, path, data, mode=0o600):
        path = self.expand_path(str(path))
        tmp = f"{path}.ddlab-tmp-{threading.get_ident():x}-{time.monotonic_ns():x}"

        def write(sftp: paramiko.SFTPClient):
            try:
                with sftp.open(tmp, "wb") as fh:
                    fh.chmod(mode)  # before any data lands in it
                    fh.set_pipelined(True)
                    fh.write(data)
                sftp.posix_rename(tmp, path)
            except OSError:
                try:
                    sftp.remove(tmp)
                except OSError:
                    pass
                raise
        self._sftp_op(f"write {path}", write)

    def read_file(self, path):
        path = self.expand_path(str(path))

        def read(sftp: paramiko.SFTPClient) -> bytes:
            # No fh.prefetch(): it reads in a thread of paramiko's, which a connection
            # dropped mid-read kills with an unhandled OSError (a traceback on the user's
            # terminal; CI saw it). Serial 32 KiB requests: the files read are small (a
            # lock, a spec, a unit); a process log read whole costs a round trip a chunk.
            with sftp.open(path, "rb") as fh:
                return fh.read()
        return self._sftp_op(f"read {path}", read)

    def expand_path(self, path):
        if not (path == "~" or path.startswith("~/")):
            return path
        if self._home is None:
            self._home = self._sftp_op("find home", lambda sftp: sftp.normalize("."))
        return self._home + path[1:]

    def http_base(self, port, host=None):
        """direct: ``host`` (or the profile's hostname) and the port, as this machine
        resolves it; tunnel: a local port forwarded over the connection to ``host:port``
        as the host sees it (its own 127.0.0.1 by default; a Slurm node's name)."""
        port = int(port)
        if self.profile.http == "direct":
            return f"http://{url_host(host or self.hops[-1].hostname)}:{port}"
        target = host or "127.0.0.1"
        with self._lock:
            tunnel = self._tunnels.get((target, port))
            if tunnel is None or tunnel.closed:
                tunnel = self._tunnels[(target, port)] = Forwarder(
                    functools.partial(self._open_tunnel_channel, host=target), port,
                    name=self.profile.name)
            return f"http://127.0.0.1:{tunnel.local_port}"

    def _open_tunnel_channel(self, port: int, peer, host: str = "127.0.0.1") -> paramiko.Channel:
        """A channel to ``port`` for one forwarded connection. A tunnel never queues up
        behind a reconnect: while another thread holds the connection for more than a
        second, or once the host is down, the connection is refused and the caller's
        HTTP client sees it (a ready check polling every half second would otherwise
        stack its attempts in front of the watch's own commands). With the link dropped
        and nobody reconnecting, it makes one short attempt (an HTTP-only caller, a
        benchmark, has no command to do it)."""
        if not self._lock.acquire(timeout=1.0):
            raise HostError(f"{self.profile.label}: reconnecting; tunnel to port {port} refused",
                            host=self.profile.name, transient=True)
        try:
            current = self._clients[-1].get_transport() if self._clients else None
            if current is None or not current.is_active():
                if self.down_since is not None:
                    raise HostError(f"{self.profile.label}: not answering; tunnel to port "
                                    f"{port} refused", host=self.profile.name, transient=True)
                current = self.open(timeout_s=min(2.0, self.profile.connect_timeout_s))
            return current.open_channel("direct-tcpip", (host, port), peer,
                                        timeout=self.profile.connect_timeout_s)
        finally:
            self._lock.release()


def _feed(chan: paramiko.Channel, data: bytes) -> None:
    try:
        chan.sendall(data)
        chan.shutdown_write()
    except _NETWORK_ERRORS:
        pass  # the reader sees the channel close


def _collect(chan: paramiko.Channel, deadline: float) -> tuple[Capped, Capped, bool]:
    """Read stdout and stderr (bounded) until EOF and the exit status; False if the
    deadline passed."""
    out, err = Capped(), Capped()
    fd = chan.fileno()
    while True:
        while chan.recv_ready():
            out.add(chan.recv(1 << 16))
        while chan.recv_stderr_ready():
            err.add(chan.recv_stderr(1 << 16))
        if chan.eof_received or chan.closed:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return out, err, False
        select.select([fd], [], [], min(remaining, 1.0))
    while chan.recv_ready():
        out.add(chan.recv(1 << 16))
    while chan.recv_stderr_ready():
        err.add(chan.recv_stderr(1 << 16))
    finished = chan.status_event.wait(max(0.0, deadline - time.monotonic()))
    return out, err, finished
