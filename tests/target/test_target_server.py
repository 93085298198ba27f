"""ddlab.target as a real server: processes on 127.0.0.1, real HTTP, real crashes.

Covers issue 3's "Must show" lines: ready within 60 s on CPU; a 128-token
/generate from DDTREE equals a non-speculative server's text with
spec_accept_length > 3; --mem-fraction-static 0.001 dies with the KV-pool
text (diagnose: kv_pool_oom); --debug-drop-verify-field num_token_non_padded
serves /v1/models, then dies at the first /generate with a traceback
diagnose calls cuda_graph_replay, and does not with --disable-cuda-graph.
"""

import json
import re
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from ddlab.diagnosis.diagnosis import diagnose

READY = "The server is fired up and ready to roll!"
PROMPT = "def parse_args(argv=None):\n    parser = argparse.ArgumentParser("
DDTREE = ["--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", "16",
          "--speculative-ddtree-topk-cap", "4"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One ``python -m ddlab.target`` process, its log in a file."""

    def __init__(self, tmp_path, *flags, port=None, cli=False):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / f"server-{self.port}.log"
        head = [sys.executable, "-m", *(("ddlab.cli", "target") if cli else ("ddlab.target",))]
        self.started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([*head, "--port", str(self.port), *flags], stdout=log,
                                         stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait(self, text=READY, timeout_s=60.0) -> float:
        """Seconds until ``text`` is in the log; fails if the process exits first."""
        while time.monotonic() - self.started < timeout_s:
            if text in self.log():
                return time.monotonic() - self.started
            if self.proc.poll() is not None:
                pytest.fail(f"server exited {self.proc.returncode} before {text!r}:\n{self.log()[-3000:]}")
            time.sleep(0.05)
        pytest.fail(f"no {text!r} within {timeout_s} s:\n{self.log()[-3000:]}")

    def exit_code(self, timeout_s=30.0) -> int:
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
        return httpx.post(self.url + path, json=body, timeout=60, **kw)

    def get(self, path):
        return httpx.get(self.url + path, timeout=60)


def generate(server, text=PROMPT, n=128, **extra):
    r = server.post("/generate", {"text": text, "sampling_params": {"max_new_tokens": n, "temperature": 0},
                                  **extra})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def tmp_module(tmp_path_factory):
    return tmp_path_factory.mktemp("target-server")


@pytest.fixture(scope="module")
def ddtree(tmp_module):
    s = Server(tmp_module, *DDTREE, "--enable-metrics", "--decode-log-interval", "5", cli=True)
    statuses = []
    while READY not in s.log() and s.proc.poll() is None and time.monotonic() - s.started < 60:
        try:
            statuses.append(s.get("/health").status_code)
        except httpx.TransportError:
            statuses.append(None)
        time.sleep(0.02)
    s.ready_s, s.statuses = s.wait(), statuses
    yield s
    s.stop()


@pytest.fixture(scope="module")
def plain(tmp_module):
    s = Server(tmp_module)
    s.wait()
    yield s
    s.stop()


@pytest.mark.slow
def test_ready_within_60s_and_503_while_starting(ddtree):
    assert ddtree.ready_s < 60
    assert 503 in ddtree.statuses
    assert 200 not in ddtree.statuses[:ddtree.statuses.index(503)]
    assert ddtree.get("/health").status_code == 200 and ddtree.get("/health_generate").status_code == 200


@pytest.mark.slow
def test_startup_logs_sglang_phases_in_order(ddtree):
    log = ddtree.log()
    phases = ["server_args=ServerArgs(", "Load weight begin. avail mem=", "Load weight end. elapsed=",
              "KV Cache is allocated. #tokens: ", "Memory pool end. avail mem=",
              "Capture cuda graph begin. This can take up to several minutes. avail mem=",
              "Capture cuda graph end. Time elapsed: ",
              "Initialized DDTree worker. block_size=16, tree_budget=16, max_tree_nodes=17", READY]
    at = [log.index(p) for p in phases]
    assert at == sorted(at)
    assert "without CUDA graph capture" in log
    assert diagnose(log).crashed is False


def test_ddtree_128_tokens_match_a_non_speculative_server(ddtree, plain):
    spec, base = generate(ddtree), generate(plain)
    assert spec["text"] == base["text"] and spec["output_ids"] == base["output_ids"]
    meta = spec["meta_info"]
    assert meta["completion_tokens"] == 128 and meta["finish_reason"] == {"type": "length", "length": 128}
    assert meta["spec_accept_length"] > 3
    assert meta["spec_accept_length"] == pytest.approx(128 / meta["spec_verify_ct"])
    assert "spec_verify_ct" not in base["meta_info"]


@pytest.mark.slow
def test_concurrent_requests_are_batched_and_lossless(ddtree, plain):
    texts = [PROMPT, "import os\nimport sys\n", "class Foo:\n    def ", "# Copyright (c) "]
    want = [generate(plain, t, 64)["text"] for t in texts]
    got = [None] * len(texts)

    def one(i):
        got[i] = generate(ddtree, texts[i], 64)["text"]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want
    assert "Decode batch, #running-req: 4," in ddtree.log()  # one verify forward for all four


@pytest.mark.slow
def test_streaming_sends_sse_chunks_then_done(ddtree):
    whole = generate(ddtree, n=40)
    with httpx.stream("POST", ddtree.url + "/generate", timeout=60,
                      json={"text": PROMPT, "sampling_params": {"max_new_tokens": 40}, "stream": True}) as r:
        lines = [ln for ln in r.iter_lines() if ln]
    assert lines[-1] == "data: [DONE]" and all(ln.startswith("data: ") for ln in lines)
    chunks = [json.loads(ln[6:]) for ln in lines[:-1]]
    assert len(chunks) > 1 and chunks[-1]["text"] == whole["text"]
    assert chunks[-1]["meta_info"]["finish_reason"] == {"type": "length", "length": 40}


@pytest.mark.slow
def test_openai_endpoints(ddtree):
    models = ddtree.get("/v1/models").json()
    assert models["data"][0] | {"created": 0} == {"id": "ddlab-tiny", "object": "model", "created": 0,
                                                  "owned_by": "sglang", "root": "ddlab-tiny", "parent": None,
                                                  "max_model_len": 320}
    c = ddtree.post("/v1/completions", {"model": "ddlab-tiny", "prompt": PROMPT, "max_tokens": 12}).json()
    assert c["object"] == "text_completion" and c["choices"][0]["finish_reason"] == "length"
    assert c["choices"][0]["text"] == generate(ddtree, n=12)["text"] and c["usage"]["completion_tokens"] == 12
    chat = ddtree.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}],
                                                "max_tokens": 5}).json()
    assert chat["object"] == "chat.completion" and chat["choices"][0]["message"]["role"] == "assistant"


@pytest.mark.slow
def test_server_info_and_metrics_report_real_decoding(ddtree):
    generate(ddtree, n=64)
    for path in ("/server_info", "/get_server_info"):
        info = ddtree.get(path).json()
        assert info["speculative_algorithm"] == "DDTREE" and info["speculative_ddtree_budget"] == 16
        state = info["internal_states"][0]
        assert state["avg_spec_accept_length"] > 1 and state["last_gen_throughput"] > 0
        assert state["memory_usage"]["kvcache"] > 0 and state["memory_usage"]["token_capacity"] > 0
    text = ddtree.get("/metrics").text
    for name in ("sglang:gen_throughput", "sglang:spec_accept_length", "sglang:spec_verify_calls_total",
                 "sglang:generation_tokens_total", "sglang:num_running_reqs", "sglang:token_usage",
                 "sglang:time_to_first_token_seconds_bucket", "sglang:inter_token_latency_seconds_count"):
        assert f"\n{name}{{" in text
    calls = float(text.split("\nsglang:spec_verify_calls_total{")[1].split("} ")[1].split()[0])
    assert calls > 0


BAD = {
    "not-json": (b"{bad", r"not valid JSON"),
    "too-long": ({"text": "x" * 300, "sampling_params": {"max_new_tokens": 100}},
                 r"maximum context length of 320"),
    "sampling": ({"text": "x", "sampling_params": {"temperature": 0.7}}, r"greedily"),
    "unknown-param": ({"text": "x", "sampling_params": {"beam": 2}}, r"unknown sampling_params"),
    "no-prompt": ({"sampling_params": {}}, r"exactly one of 'text' and 'input_ids'"),
    "bad-ids": ({"input_ids": [1, 999]}, r"byte ids"),
    "bad-stop": ({"text": "x", "sampling_params": {"stop": [1]}}, r"list of non-empty strings"),
    "bad-temperature": ({"text": "x", "sampling_params": {"temperature": "hot"}}, r"must be a number"),
}


@pytest.mark.parametrize("body,message", BAD.values(), ids=BAD.keys())
def test_bad_requests_get_400_and_the_server_stays_up(ddtree, body, message):
    r = (httpx.post(ddtree.url + "/generate", content=body, timeout=30) if isinstance(body, bytes)
         else ddtree.post("/generate", body))
    assert r.status_code == 400
    assert re.search(message, r.json()["error"]["message"])
    assert ddtree.get("/health").status_code == 200


@pytest.mark.slow
def test_metrics_need_enable_metrics(plain):
    assert plain.get("/metrics").status_code == 404


# --- crashes: each its own process ------------------------------------------------


@pytest.mark.slow
def test_kv_pool_too_small_dies_with_sglang_text(tmp_path):
    s = Server(tmp_path, "--mem-fraction-static", "0.001")
    assert s.exit_code() != 0
    log = s.log()
    assert "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static." in log
    assert "Traceback (most recent call last)" in log
    assert diagnose(log).kind == "kv_pool_oom"


@pytest.mark.slow
def test_dropped_verify_field_dies_at_first_generate(tmp_path):
    s = Server(tmp_path, *DDTREE, "--debug-drop-verify-field", "num_token_non_padded")
    try:
        s.wait()
        assert s.get("/v1/models").status_code == 200
        assert s.get("/health").status_code == 200  # a 1-token generation: prefill only
        with pytest.raises(httpx.TransportError):
            s.post("/generate", {"text": PROMPT, "sampling_params": {"max_new_tokens": 32}})
        assert s.exit_code(timeout_s=15) != 0
    finally:
        s.stop()
    log = s.log()
    assert "in _grouped_foreach_copy_" in log and "NoneType" in log and "Scheduler hit an exception" in log
    d = diagnose(log)
    assert d.kind == "cuda_graph_replay" and d.crashed


@pytest.mark.slow
def test_dropped_verify_field_without_graphs_serves(tmp_path):
    s = Server(tmp_path, *DDTREE, "--debug-drop-verify-field", "num_token_non_padded", "--disable-cuda-graph")
    try:
        s.wait()
        assert generate(s, n=32)["meta_info"]["completion_tokens"] == 32
        assert s.proc.poll() is None
    finally:
        s.stop()


@pytest.mark.slow
def test_graph_sized_by_block_size_dies_with_size_mismatch(tmp_path):
    s = Server(tmp_path, "--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", "32",
               "--debug-graph-tokens-per-req", "16")
    try:
        s.wait()
        with pytest.raises(httpx.TransportError):
            s.post("/generate", {"text": PROMPT, "sampling_params": {"max_new_tokens": 32}})
        assert s.exit_code(timeout_s=15) != 0
    finally:
        s.stop()
    log = s.log()
    assert "size of tensor a (16) must match the size of tensor b (33)" in log
    assert diagnose(log).kind == "cuda_graph_replay"


STARTUP_FAILURES = {
    "capture": (["--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", "64",
                 "--device-memory-gb", "0.05", "--mem-fraction-static", "0.99"],
                "Exception: Capture cuda graph failed: ", "cuda_graph_capture"),
    "bad-flag": (["--speculative-ddtree-budgte", "8"],
                 "error: unrecognized arguments: --speculative-ddtree-budgte", "bad_argument"),
    "model": (["--model-path", "/nonexistent/model"], "is not a local folder", "model_not_found"),
}


@pytest.mark.slow
@pytest.mark.parametrize("flags,text,kind", STARTUP_FAILURES.values(), ids=STARTUP_FAILURES.keys())
def test_startup_failures_exit_nonzero_with_sglang_texts(tmp_path, flags, text, kind):
    s = Server(tmp_path, *flags)
    assert s.exit_code() != 0
    assert text in s.log()
    assert diagnose(s.log()).kind == kind


@pytest.mark.slow
def test_busy_port_fails_fast(tmp_path, plain):
    s = Server(tmp_path, port=plain.port)
    assert s.exit_code(timeout_s=20) == 1
    assert "address already in use" in s.log() and diagnose(s.log()).kind == "port_in_use"
