"""``ddlab diagnose`` on the target's own logs: every fault switch, with uvicorn's lines on and off.

Each fault the target can be asked for (docs/target.md: the memory envelope and
"Field bugs") runs as a real ``python -m ddlab.target`` process, under the default
``--log-format 0.5.23`` (0.4 where only 0.4 crashes), once with uvicorn's lines
(``--log-level-http info``, SGLang's default) and once without (the target's
default). Its log must be diagnosed as the real SGLang log of the same fault is
labelled (tests/fixtures/logs/sglang/index.json): crashed or not, the kind, and
the phase. A busy port is held once by another target (its warmup then succeeds
against the holder, as the real fixture's) and once by a server that is not SGLang
(its warmup fails, and the process is killed). Before issue 25 the target printed uvicorn's start lines before its
own startup, and a capture failure then read as phase ``ready``.
"""

import http.server
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.lab import http_client
from testhost.ports import free_port

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "sglang"
LABELS = json.loads((REAL / "index.json").read_text())
READY = "The server is fired up and ready to roll!"
DDTREE = ["--speculative-algorithm", "DDTREE", "--speculative-ddtree-topk-cap", "4"]
PROMPTS = ["def parse_args(argv=None):\n    parser = argparse.ArgumentParser(", "import os\nimport sys\n",
           "class Foo:\n    def ", "# Copyright (c) "]

FAULTS = {  # flags, what the run does once ready (None: it dies starting), the real log it reads as
    "capture-oom": ([*DDTREE, "--speculative-ddtree-budget", "64", "--device-memory-gb", "0.05",
                     "--mem-fraction-static", "0.99"], None, "cuda_graph_capture__0.5.23__capture-failed-oom.log"),
    "kv-too-small": (["--mem-fraction-static", "0.001"], None, "kv_pool_oom__0.5.23__not-enough-memory.log"),
    "context-too-long": (["--context-length", "4096"], None,
                         "bad_argument__0.5.23__dflash-requires-draft-model-path.log"),
    "replay-crash": ([*DDTREE, "--speculative-ddtree-budget", "16", "--debug-drop-verify-field", "positions"],
                     "dies", "cuda_graph_replay__0.5.23__nonetype-copy-replay-inputs.log"),
    "replay-crash-raise": ([*DDTREE, "--speculative-ddtree-budget", "16", "--debug-drop-verify-field",
                            "num_token_non_padded", "--debug-drop-verify-mode", "raise"], "dies",
                           "cuda_graph_replay__0.5.23__nonetype-copy-replay-inputs.log"),
    "wrong-tokens": ([*DDTREE, "--speculative-ddtree-budget", "16", "--debug-drop-verify-field",
                      "num_token_non_padded"], "serves", "healthy__0.5.23__dflash-startup-and-decode.log"),
    "graph-too-narrow": ([*DDTREE, "--speculative-ddtree-budget", "32", "--debug-graph-tokens-per-req", "16"],
                         "serves", "healthy__0.5.23__dflash-startup-and-decode.log"),
    "graph-too-narrow-0.4": ([*DDTREE, "--speculative-ddtree-budget", "32", "--debug-graph-tokens-per-req",
                              "16", "--log-format", "0.4"], "dies",
                             "cuda_graph_replay__0.4.10.post2__size-mismatch-replay-prepare.log"),
    "port-in-use": ([], "held", "port_in_use__0.5.23__uvicorn-bind-after-startup.log"),
    "port-in-use-by-another-server": ([], "held-foreign", "port_in_use__0.5.23__uvicorn-bind-after-startup.log"),
}
HTTP = {"uvicorn-on": ["--log-level-http", "info"], "uvicorn-off": []}


def _start(tmp_path, flags, port=None):
    port = port or free_port()
    log = tmp_path / f"target-{port}-{time.monotonic_ns()}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "ddlab.target", "--port", str(port),
                                 "--decode-log-interval", "5", *flags], stdout=out, stderr=subprocess.STDOUT)
    return proc, log, port


def _ready(proc, log: Path) -> None:
    deadline = time.monotonic() + 120
    while READY not in log.read_text(errors="replace"):
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)


def _generate(port: int):
    return http_client.post(f"http://127.0.0.1:{port}/generate", timeout=60,
                      json={"text": PROMPTS, "sampling_params": {"max_new_tokens": 32, "temperature": 0}})


class _Quiet(http.server.BaseHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (http.server's signature)
        pass


@pytest.fixture(scope="module")
def foreign_holder():
    """A server that is not SGLang on the port (every GET: 501): the warmup fails against it."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def holder(tmp_path_factory):
    """A target serving on the port the port-in-use runs want."""
    proc, log, port = _start(tmp_path_factory.mktemp("holder"), [])
    _ready(proc, log)
    yield port
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)


def run_fault(tmp_path, name: str, http: list, holder_port=None) -> str:
    flags, then, _ = FAULTS[name]
    proc, log, port = _start(tmp_path, [*flags, *http], port=holder_port if then and then.startswith("held") else None)
    try:
        if then in ("dies", "serves"):
            _ready(proc, log)
        if then == "dies":
            with pytest.raises(httpx.TransportError):
                _generate(port)
        elif then == "serves":
            assert _generate(port).status_code == 200
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return log.read_text(errors="replace")


@pytest.mark.slow
@pytest.mark.parametrize("http", HTTP.values(), ids=HTTP.keys())
@pytest.mark.parametrize("name", FAULTS, ids=FAULTS.keys())
def test_the_targets_fault_reads_as_the_real_log_of_that_fault(request, tmp_path, name, http):
    then = FAULTS[name][1]
    holder_port = request.getfixturevalue({"held": "holder", "held-foreign": "foreign_holder"}[then]) \
        if then and then.startswith("held") else None
    log = run_fault(tmp_path, name, http, holder_port)
    real = LABELS[FAULTS[name][2]]
    found = diagnose(log)
    said = (found.crashed, found.kind if found.crashed else None, found.phase)
    assert said == (real["crashed"], real["kind"], real["phase"]), found.render() + "\n\n" + log[-4000:]
    if http:  # uvicorn's start lines are there, after the scheduler's startup, when it got that far
        assert ("Uvicorn running on" in log or "Started server process" in log) == (real["phase"] in (
            "ready", "serving")), log[-4000:]


def test_every_fault_switch_of_the_target_is_run_here():
    """The switches docs/target.md names: the memory envelope's three failures, the field
    bugs (``--debug-drop-verify-field`` in both modes, ``--debug-graph-tokens-per-req``)
    and a busy port."""
    flags = {f for spec in FAULTS.values() for f in spec[0]}
    assert {"--mem-fraction-static", "--device-memory-gb", "--context-length", "--debug-drop-verify-field",
            "--debug-drop-verify-mode", "--debug-graph-tokens-per-req"} <= flags
    assert {LABELS[spec[2]]["phase"] for spec in FAULTS.values()} == {
        "launch", "memory_pool", "graph_capture", "ready", "serving"}
