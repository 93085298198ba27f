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
``{"id", "code", "out", "err" (base64), "timed_out"}``; ``code`` is 128+N
for signal N. Requests run concurrently. When its stdin closes (the
connection is gone) it kills what it still runs and exits.

:class:`AgentClient` is this side of the protocol (the SSH transport's); it
is sent along with the agent's source and simply unused there.
"""

import base64
import json
import os
import signal
import subprocess
import sys
import threading

VERSION = 1
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


def _run(req):
    data = base64.b64decode(req["stdin"]) if req.get("stdin") is not None else None
    answer = {"id": req["id"], "code": 0, "out": "", "err": "", "timed_out": False}
    try:
        proc = _spawn(req["argv"], data is not None)
    except OSError as exc:
        answer["code"] = 127 if isinstance(exc, FileNotFoundError) else 126
        answer["err"] = _b64(("%s: %s\n" % (req["argv"][0], exc.strerror)).encode())
        return _reply(answer)
    _running[req["id"]] = proc
    try:
        out, err = proc.communicate(data, timeout=req["timeout"])
    except subprocess.TimeoutExpired:
        answer["timed_out"] = True
        _kill(proc)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a grandchild escaped the group and holds the pipes
            out, err = b"", b""
    finally:
        _running.pop(req["id"], None)
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    answer.update(code=code if code >= 0 else 128 - code, out=_b64(out), err=_b64(err))
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


class _Slot:
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
        """(code, out, err, timed_out); raises AgentLost, or TimeoutError after wait_s."""
        slot = _Slot()
        with self._lock:
            if self.dead:
                raise AgentLost("agent channel closed")
            self._next_id += 1
            request_id = self._next_id
            self._pending[request_id] = slot
        line = json.dumps({"id": request_id, "argv": argv, "timeout": timeout_s,
                           "stdin": None if data is None else _b64(data)}) + "\n"
        try:
            with self._send_lock:
                self.chan.sendall(line.encode("utf-8"))
        except Exception as exc:
            with self._lock:
                self._pending.pop(request_id, None)
            raise AgentLost(repr(exc))
        if not slot.event.wait(wait_s):
            with self._lock:
                self._pending.pop(request_id, None)
            raise TimeoutError("the agent did not answer in %.0f s" % wait_s)
        if slot.reply is None:
            raise AgentLost("agent channel closed")
        reply = slot.reply
        return (reply["code"], base64.b64decode(reply["out"]), base64.b64decode(reply["err"]),
                reply["timed_out"])

    def _read(self):
        try:
            for line in self._file:
                message = _parse(line)
                if isinstance(message, dict):
                    with self._lock:
                        slot = self._pending.pop(message.get("id"), None)
                    if slot is not None:
                        slot.reply = message
                        slot.event.set()
        except Exception:
            pass
        finally:
            with self._lock:
                self.dead = True
                waiting, self._pending = list(self._pending.values()), {}
            for slot in waiting:
                slot.event.set()

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
