"""The command agent that ddlab runs on an SSH host (stdlib only, Python >= 3.6).

Why it exists: sshd runs every command through the user's login shell, and
GPU hosts' ``~/.bashrc`` files (conda/pyenv init) make that cost hundreds of
milliseconds per command even on a persistent connection. The SSH transport
therefore starts this file once per connection (``python -c SOURCE``: one
shell start) and sends it argv lists; it runs each with ``subprocess`` —
never a shell — in its own session, kills the session's process group on
timeout, and answers. A command costs a fork/exec instead of a login shell.

Protocol, one JSON object per line: the agent first prints
``{"hello": "ddlab-agent", "version": 1, "pid": N}``; requests are
``{"id", "argv", "stdin" (base64 or null), "timeout"}``; replies are
``{"id", "code", "out", "err" (base64), "timed_out", "skipped"}``; ``code`` is
128+N for signal N. Requests run concurrently. When its stdin closes (the
connection is gone) it kills what it still runs and exits.

Bounded: a command's output is read in chunks and a reply carries at most
``MAX_OUT_BYTES`` of each stream, its first ``HEAD_BYTES`` and its last bytes
(:class:`Capped`); ``skipped`` is ``[[at, n], [at, n]]`` for stdout and stderr:
``n`` bytes left out after the first ``at``. A command that prints a gigabyte
(a server's log read whole) costs the agent a few tens of MB, never the
gigabyte (issue 23: it was 5.9 GB for a 1 GB log, and the reply took so long
that the connection was given up for lost). The local transport and the exec
fallback read through the same :class:`Capped`.

:class:`AgentClient` is this side of the protocol (the SSH transport's); it
is sent along with the agent's source and simply unused there.
"""

import base64
import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time

VERSION = 2
MAX_OUT_BYTES = 8 << 20  # of each stream, in one reply
HEAD_BYTES = 1 << 20     # of those, from the start (a log's start-up lines); the rest its end
_CHUNK = 1 << 16
_write_lock = threading.Lock()
_running = {}


def _b64(data):
    return base64.b64encode(data or b"").decode("ascii")


def _reply(obj):
    line = (json.dumps(obj) + "\n").encode("utf-8")
    with _write_lock:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


def _spawn(argv, has_input):
    return subprocess.Popen(argv, stdin=subprocess.PIPE if has_input else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


class Capped(object):
    """One stream's first ``head`` bytes and last ``limit - head`` bytes, fed in chunks;
    ``skipped`` counts the bytes between (never held: memory stays under limit + a chunk)."""

    def __init__(self, limit=MAX_OUT_BYTES, head=HEAD_BYTES):
        self.head_max = min(head, limit // 2)
        self.tail_max = limit - self.head_max
        self.head = bytearray()
        self.tail = collections.deque()
        self.tail_len = 0
        self.skipped = 0

    def add(self, chunk):
        room = self.head_max - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_len += len(chunk)
        while self.tail and self.tail_len - len(self.tail[0]) >= self.tail_max:
            self.tail_len -= len(self.tail[0])
            self.skipped += len(self.tail.popleft())

    def value(self):
        """(bytes kept, [where the gap is, bytes skipped there])."""
        tail = b"".join(self.tail)
        extra = max(0, len(tail) - self.tail_max)
        return bytes(self.head) + tail[extra:], [len(self.head), self.skipped + extra]


def _drain(stream, capped):
    try:
        while True:
            chunk = os.read(stream.fileno(), _CHUNK)
            if not chunk:
                return
            capped.add(chunk)
    except (OSError, ValueError):
        return


def _feed(stream, data):
    try:
        stream.write(data)
    except (OSError, ValueError):  # the command left without reading it all
        pass
    try:
        stream.close()
    except (OSError, ValueError):
        pass


def communicate(proc, data, timeout, limit=MAX_OUT_BYTES):
    """(out Capped, err Capped, timed_out) of a process started with pipes: its output
    read in chunks, bounded; at ``timeout`` (its pipes still open counts) its process
    group is killed."""
    out, err = Capped(limit), Capped(limit)
    threads = [threading.Thread(target=_drain, args=(proc.stdout, out)),
               threading.Thread(target=_drain, args=(proc.stderr, err))]
    if data is not None:
        threads.append(threading.Thread(target=_feed, args=(proc.stdin, data)))
    for thread in threads:
        thread.daemon = True
        thread.start()
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        for thread in threads[:2]:
            thread.join(max(0.0, deadline - time.monotonic()))
        if timed_out or any(thread.is_alive() for thread in threads[:2]):
            timed_out = True  # a grandchild that holds the pipes counts as the command
            _kill(proc)
            for thread in threads[:2]:
                thread.join(5)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
    finally:  # also when interrupted: no pipe is left open
        close_pipes(proc)
    return out, err, timed_out


def close_pipes(proc):
    """Close a process's pipes (those it has); closing one twice is harmless."""
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            if stream is not None:
                stream.close()
        except (OSError, ValueError):
            pass


def _run(req):
    data = base64.b64decode(req["stdin"]) if req.get("stdin") is not None else None
    answer = {"id": req["id"], "code": 0, "out": "", "err": "", "timed_out": False,
              "skipped": [[0, 0], [0, 0]]}
    try:
        proc = _spawn(req["argv"], data is not None)
    except OSError as exc:
        answer["code"] = 127 if isinstance(exc, FileNotFoundError) else 126
        answer["err"] = _b64(("%s: %s\n" % (req["argv"][0], exc.strerror)).encode())
        return _reply(answer)
    _running[req["id"]] = proc
    try:
        out, err, answer["timed_out"] = communicate(proc, data, req["timeout"],
                                                    req.get("max_out") or MAX_OUT_BYTES)
    finally:
        _running.pop(req["id"], None)
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    (out, out_skipped), (err, err_skipped) = out.value(), err.value()
    answer.update(code=code if code >= 0 else 128 - code, skipped=[out_skipped, err_skipped])
    answer["out"] = _b64(out)
    del out
    answer["err"] = _b64(err)
    _reply(answer)


def _serve(req):
    try:
        _run(req)
    except Exception as exc:  # never leave the client waiting
        _reply({"id": req.get("id"), "code": 125, "out": "", "timed_out": False,
                "err": _b64(("ddlab-agent: %r\n" % (exc,)).encode())})


def main():
    _reply({"hello": "ddlab-agent", "version": VERSION, "pid": os.getpid()})
    for line in sys.stdin.buffer:
        if line.strip():
            threading.Thread(target=_serve, args=(json.loads(line),), daemon=True).start()
    for proc in list(_running.values()):
        _kill(proc)


class AgentUnavailable(Exception):
    """The agent did not start (no such interpreter, or it never said hello)."""


class AgentLost(Exception):
    """The agent's channel closed (the connection dropped, or the agent died)."""


class _PendingReply:
    """A request's answer, to come: set by the reader thread, awaited by the caller."""

    def __init__(self):
        self.event = threading.Event()
        self.reply = None


class AgentClient:
    """Talks to one running agent over a channel-like object (``makefile``, ``sendall``)."""

    def __init__(self, chan, *, hello_timeout_s):
        self.chan = chan
        self.dead = False
        self._pending = {}
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._next_id = 0
        self._file = chan.makefile("rb")
        self.pid = self._hello(hello_timeout_s)
        threading.Thread(target=self._read, daemon=True, name="ddlab-agent-reader").start()

    def _hello(self, timeout_s):
        """Skip what the login shell printed; return the agent's pid once it says hello."""
        self.chan.settimeout(timeout_s)
        seen = []
        try:
            for line in self._file:
                message = _parse(line)
                if isinstance(message, dict) and message.get("hello") == "ddlab-agent":
                    self.chan.settimeout(None)
                    return message.get("pid")
                seen.append(line.decode("utf-8", "replace").strip())
        except Exception as exc:  # socket.timeout, a closed channel
            seen.append(repr(exc))
        raise AgentUnavailable(" | ".join(x for x in seen if x)[-300:] or "no output")

    def call(self, argv, data, timeout_s, wait_s):
        """(code, out, err, timed_out, skipped); raises AgentLost, or TimeoutError after
        wait_s. ``skipped``: [[at, n], [at, n]], what each stream left out (module docstring)."""
        pending = _PendingReply()
        with self._lock:
            if self.dead:
                raise AgentLost("agent channel closed")
            self._next_id += 1
            request_id = self._next_id
            self._pending[request_id] = pending
        line = json.dumps({"id": request_id, "argv": argv, "timeout": timeout_s,
                           "stdin": None if data is None else _b64(data)}) + "\n"
        try:
            with self._send_lock:
                self.chan.sendall(line.encode("utf-8"))
        except Exception as exc:
            with self._lock:
                self._pending.pop(request_id, None)
            raise AgentLost(repr(exc))
        if not pending.event.wait(wait_s):
            with self._lock:
                self._pending.pop(request_id, None)
            raise TimeoutError("the agent did not answer in %.0f s" % wait_s)
        if pending.reply is None:
            raise AgentLost("agent channel closed")
        reply = pending.reply
        return (reply["code"], base64.b64decode(reply["out"]), base64.b64decode(reply["err"]),
                reply["timed_out"], reply.get("skipped") or [[0, 0], [0, 0]])

    def _read(self):
        try:
            for line in self._file:
                message = _parse(line)
                if isinstance(message, dict):
                    with self._lock:
                        pending = self._pending.pop(message.get("id"), None)
                    if pending is not None:
                        pending.reply = message
                        pending.event.set()
        except Exception:
            pass
        finally:
            with self._lock:
                self.dead = True
                waiting, self._pending = list(self._pending.values()), {}
            for pending in waiting:
                pending.event.set()

    def close(self):
        self.dead = True
        self.chan.close()


def _parse(line):
    try:
        return json.loads(line)
    except ValueError:
        return None


def source():
    """This file's text, for ``python -c``."""
    with open(__file__, encoding="utf-8") as fh:
        return fh.read()


if __name__ == "__main__":
    main()
