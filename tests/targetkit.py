"""One embedded target process started by a test, its log in a file (a helper, not a test
module): tests/target's SGLang-dialect and vLLM-dialect tests start it the same way."""

from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

from ddlab.lab import http_client
from testhost.ports import free_port


def requests_served(metrics_text: str) -> int:
    """The requests a server finished, its ``sglang:num_requests_total``, from a /metrics answer."""
    return int(float(re.search(r"^sglang:num_requests_total\{[^}]*\} (\S+)$", metrics_text, re.M).group(1)))


class TargetProcess:
    """``argv`` + ``--port N`` + ``flags``, stdout and stderr in ``<name>-<port>.log``.
    ``keep_cr``: read the log as bytes (vLLM's formatter repeats a record behind ``\\r\\n``)."""

    ready = ""
    name = "server"
    keep_cr = False

    def __init__(self, tmp_path, argv: list[str], *flags, env=None, port=None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / f"{self.name}-{self.port}.log"
        self.started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([*argv, "--port", str(self.port), *flags], stdout=log,
                                         stderr=subprocess.STDOUT,
                                         env={**os.environ, **env} if env else None)

    def log(self) -> str:
        if self.keep_cr:
            return self.log_path.read_bytes().decode(errors="replace")
        return self.log_path.read_text(errors="replace")

    def wait(self, text=None, timeout_s=60.0) -> float:
        """Seconds until ``text`` (the ready line by default) is in the log; fails if the
        process exits first."""
        text = text or self.ready
        while time.monotonic() - self.started < timeout_s:
            if text in self.log():
                return time.monotonic() - self.started
            if self.proc.poll() is not None:
                pytest.fail(f"server exited {self.proc.returncode} before {text!r}:\n{self.log()[-3000:]}")
            time.sleep(0.05)
        pytest.fail(f"no {text!r} within {timeout_s} s:\n{self.log()[-3000:]}")

    def exit_code(self, timeout_s=60.0) -> int:
        return self.proc.wait(timeout=timeout_s)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def post(self, path, body, **kw):
        return http_client.post(self.url + path, json=body, timeout=60, **kw)

    def get(self, path):
        return http_client.get(self.url + path, timeout=60)
