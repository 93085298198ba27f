"""ddlab.target in vLLM's dialect (issue 28 item 4): ``python -m ddlab.target --dialect vllm``
as a real process on 127.0.0.1, against the vLLM 0.34.0 wheel's source texts.

- vLLM's flags parsed as ``vllm serve`` parses them (positional model, underscores, JSON configs);
- vLLM's API (/health, /v1/models, /v1/completions, /v1/chat/completions) and /metrics under
  vLLM's names, the counters moving with the requests served;
- every ``[file.py:N]`` the target prints: that line of the wheel is a logging call whose format
  string is the one the target's line fits (skipped where the wheel is not unpacked:
  /work/wheels/vllm/0.34.0, ``pip download --no-deps vllm==0.34.0``);
- the lossless property: eagle-like and ngram decoding give the non-speculative tokens;
- each fault in vLLM's words: replay crash (the engine core dies while serving), silent wrong
  tokens, capture OOM, KV cache too small; a busy port; bad arguments.
"""

import ast
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.lab import http_client
from ddlab.target.vllm_lines import CLIENT_MESSAGE, ENGINE_DEAD, KV_HINT
from vllm_sources import SOURCE_PARTS, SOURCES
from targetkit import TargetProcess
from testhost.ports import free_port

WHEEL = Path(os.environ.get("DDLAB_VLLM_WHEEL_DIR", "/work/wheels/vllm/0.34.0"))
READY = "INFO:     Application startup complete."
PROMPT = "def parse_args(argv=None):\n    parser = argparse.ArgumentParser("
EAGLE = ["--speculative-config", '{"method": "eagle3", "num_speculative_tokens": 4}']
NGRAM = ["--speculative-config",
         '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3, "prompt_lookup_min": 2}']
LINE = re.compile(r"^\((APIServer|EngineCore_DP0) pid=(\d+)\) (INFO|WARNING|ERROR) (\d\d-\d\d \d\d:\d\d:\d\d) "
                  r"\[([\w.]+:\d+)\] (.*)$")


class Server(TargetProcess):
    """One ``python -m ddlab.target --dialect vllm`` process, its log in a file."""

    ready, name, keep_cr = READY, "vllm", True  # keeps vLLM's \r\n

    def __init__(self, tmp_path, *flags, env=None, port=None):
        super().__init__(tmp_path, [sys.executable, "-m", "ddlab.target", "--dialect", "vllm",
                                    "--host", "127.0.0.1"], *flags, port=port,
                         env={"VLLM_LOG_STATS_INTERVAL": "0.5", **(env or {})})


def complete(server, n=64, chat=False, prompt=PROMPT):
    body = ({"messages": [{"role": "user", "content": prompt}]} if chat else {"prompt": prompt})
    r = http_client.post(f"{server.url}/v1/{'chat/' if chat else ''}completions",
                   json={"model": "ddlab-tiny", "max_tokens": n, "temperature": 0, **body}, timeout=120)
    return r


def text_of(r) -> str:
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    return choice["message"]["content"] if "message" in choice else choice["text"]


def metrics(server) -> dict:
    r = http_client.get(f"{server.url}/metrics", timeout=10)
    assert r.status_code == 200
    out = {}
    for row in r.text.splitlines():
        if row and not row.startswith("#"):
            name, value = row.rsplit(" ", 1)
            out[name] = float(value)
    return out


def metric(values: dict, name: str, **labels) -> float:
    wanted = {"model_name": "ddlab-tiny", "engine": "0", **{k: str(v) for k, v in labels.items()}}
    for key, value in values.items():
        mname, _, rest = key.partition("{")
        got = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        if mname == name and got == wanted:
            return value
    raise KeyError(f"{name} {labels}")


@pytest.fixture(scope="module")
def tmp_module(tmp_path_factory):
    return tmp_path_factory.mktemp("vllm")


@pytest.fixture(scope="module")
def eagle(tmp_module):
    s = Server(tmp_module, *EAGLE)
    s.wait()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def plain(tmp_module):
    s = Server(tmp_module, "--enforce-eager")
    s.wait()
    yield s
    s.stop()


# --- the log lines -------------------------------------------------------------------------

def _format_regex(fmt: str) -> str:
    out, i = "", 0
    for m in re.finditer(r"%(?:\.\d+)?[sdf]|%03d|%%", fmt):
        out += re.escape(fmt[i:m.start()])
        spec = m.group(0)
        out += "%" if spec == "%%" else r"-?[\d.]+" if spec[-1] in "df" and "s" not in spec else r".*?"
        i = m.end()
    return out + re.escape(fmt[i:]) + "$"


def _literals(path: Path, first: int, last: int) -> str:
    """The string literals of source lines first..last (1-based), concatenated."""
    text = "\n".join(path.read_text().splitlines()[first - 1:last])
    found = re.findall(r'(?<![\w])[rfb]?("(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\')', text)
    return "".join(ast.literal_eval(s) if not s.startswith("f") else s[2:-1] for s in found)


@pytest.mark.skipif(not WHEEL.is_dir(), reason=f"the vLLM 0.34.0 wheel is not unpacked at {WHEEL}")
@pytest.mark.parametrize("src", sorted(SOURCES))
def test_each_cited_line_is_a_logging_call_with_that_format_in_the_wheel(src):
    rel, fmt = SOURCES[src]
    path, n = WHEEL / rel, int(src.rsplit(":", 1)[1])
    assert path.name == src.split(":")[0]
    call = path.read_text().splitlines()[n - 1]
    assert re.search(r"\b(logger|lgr)\.(info|warning|exception|error)(_once)?\(|\blog_fn\(", call), call
    if src in SOURCE_PARTS:
        whole = _literals(path, 1, n + 12)
        for part in SOURCE_PARTS[src]:
            assert part in whole or part.replace("{self.engine_index:03d}", "{self.engine_index:03d}") in \
                path.read_text(), (src, part)
    else:
        assert fmt in _literals(path, n, n + 12), (src, fmt, _literals(path, n, n + 12))


@pytest.mark.skipif(not WHEEL.is_dir(), reason=f"the vLLM 0.34.0 wheel is not unpacked at {WHEEL}")
def test_each_frame_of_the_engine_cores_death_is_that_line_of_the_wheel():
    """vllm_graphs writes the engine core's and the API server's tracebacks in vLLM's frames:
    each (file, line, function, code) is that line of the 0.34.0 wheel, in that function."""
    from ddlab.target.vllm_graphs import API_FRAMES, COPY_LINES, FRAMES

    copies = [("vllm/compilation/backends.py", n, "copy_and_call", code) for code, n in COPY_LINES.items()]
    for rel, n, func, code in (*FRAMES, *copies, *API_FRAMES):
        lines = (WHEEL.parent / "0.34.0" / rel).read_text().splitlines()
        assert lines[n - 1].strip() == code, (rel, n, lines[n - 1])
        indent = len(lines[n - 1]) - len(lines[n - 1].lstrip())
        defs = [ln for ln in lines[:n] if re.match(r"\s*(async )?def \w+", ln)
                and len(ln) - len(ln.lstrip()) < indent]  # the function the line is in
        assert re.match(rf"\s*(async )?def {func}\(", defs[-1]), (rel, n, defs[-1])


def test_startup_lines_are_vllms_in_vllms_order_and_fit_their_sources(eagle):
    rows = [LINE.match(r.rstrip("\r")) for r in eagle.log().splitlines()]
    rows = [m for m in rows if m]
    pids = {m.group(2) for m in rows}
    assert pids == {str(eagle.proc.pid)}
    srcs = [m.group(5) for m in rows]
    order = ["startup.py:38", "startup.py:96", "model.py:761", "model.py:2214", "scheduler.py:354",
             "core.py:153", "default_loader.py:543", "model_runner.py:441", "gpu_worker.py:795",
             "kv_cache_utils.py:1168", "model_runner.py:1216", "core.py:458", "entry.py:135",
             "entry.py:139", "launcher.py:188", "launcher.py:197"]
    at = [srcs.index(s) for s in order]
    assert at == sorted(at), list(zip(order, at))
    engine_side = {"core.py:153", "default_loader.py:543", "model_runner.py:441", "gpu_worker.py:795",
                   "kv_cache_utils.py:1168", "model_runner.py:1216", "core.py:458"}
    for m in rows:
        src, msg = m.group(5), m.group(6)
        assert m.group(1) == ("EngineCore_DP0" if src in engine_side else "APIServer") or \
            src.startswith("cuda_graph_runner.py"), m.group(0)
        if src in SOURCES and src != "startup.py:38":
            assert re.match(_format_regex(SOURCES[src][1]), msg), (src, msg)
    log = eagle.log()
    assert "non-default args: {'host': '127.0.0.1', 'port': %d, 'speculative_config': {'method': " \
           "'eagle3', 'num_speculative_tokens': 4}}" % eagle.port in log
    assert "SpeculativeConfig(method='eagle3', model='ddlab-tiny-drafter', num_spec_tokens=4)" in log
    assert log.count("Loading weights took") == 2  # the target, then the drafter
    # the logo is one record of several lines, each behind the prefix (NewLineFormatter)
    assert re.search(r"\[startup\.py:38\] \r\n\(APIServer pid=\d+\) INFO [\d: -]+\[startup\.py:38\] "
                     r"\s+\S", log)
    assert re.search(r"\[startup\.py:38\] .*version 0\.34\.0\+ddlab", log)


@pytest.mark.slow
def test_eager_has_no_capture_line_and_none_mode_warns_as_vllm_and_sigterm_exits_0(plain, tmp_path):
    """An eager server logs no capture; cudagraph_mode none warns as vLLM does. Its server
    also shows the graceful stop (SIGTERM: uvicorn's shutdown lines, exit 0), which had a
    server of its own (--enforce-eager) before: the stop is the same in either mode."""
    assert "Graph capturing finished" not in plain.log()
    assert "[model_runner.py:1149]" not in plain.log()
    s = Server(tmp_path, "--compilation-config", '{"cudagraph_mode": "none"}')
    try:
        s.wait()
        log = s.log()
        assert "Graph capturing finished" not in log
        assert re.search(r"WARNING .*\[model_runner\.py:1149\] Skipping encoder and decoder CUDA graph", log)
        s.proc.terminate()
        assert s.exit_code() == 0
    finally:
        s.stop()
    tail = s.log().split(READY, 1)[1]
    assert tail.split() == "INFO: Shutting down INFO: Waiting for application shutdown. INFO: Application " \
                           "shutdown complete. INFO: Finished server process [{}]".format(s.proc.pid).split()


def test_stats_lines_every_interval_with_spec_decoding_figures(eagle):
    before = eagle.log().count("SpecDecoding metrics:")
    text_of(complete(eagle, 96))
    deadline = time.monotonic() + 20
    while eagle.log().count("SpecDecoding metrics:") == before and time.monotonic() < deadline:
        time.sleep(0.1)
    rows = [LINE.match(r.rstrip("\r")) for r in eagle.log().splitlines()]
    stats = [m.group(6) for m in rows if m and m.group(5) == "loggers.py:335"]
    spec = [m.group(6) for m in rows if m and m.group(5) == "metrics.py:120"]
    assert stats and spec
    for msg in stats:
        assert re.match(_format_regex(SOURCES["loggers.py:335"][1]), msg), msg
        assert msg.startswith("Engine 000: ")
    for msg in spec:
        assert re.match(_format_regex(SOURCES["metrics.py:120"][1]), msg), msg
        rates = msg.split("Per-position acceptance rate: ")[1].split(", Avg")[0].split(", ")
        assert len(rates) == 4  # num_speculative_tokens
        assert [float(r) for r in rates] == sorted((float(r) for r in rates), reverse=True)
        mean = float(re.search(r"Mean acceptance length: ([\d.]+)", msg).group(1))
        assert mean == pytest.approx(1 + sum(float(r) for r in rates), abs=0.02)


# --- the API and the metrics ---------------------------------------------------------------

def test_health_models_version_and_the_openai_endpoints(eagle, plain):
    assert http_client.get(f"{eagle.url}/health").status_code == 200
    assert http_client.get(f"{eagle.url}/version").json()["version"].startswith("0.34.0")
    [card] = http_client.get(f"{eagle.url}/v1/models").json()["data"]
    assert (card["id"], card["owned_by"], card["max_model_len"]) == ("ddlab-tiny", "vllm", 320)
    r = complete(eagle, 32)
    body = r.json()
    assert body["object"] == "text_completion" and body["usage"]["completion_tokens"] == 32
    chat = complete(eagle, 16, chat=True).json()
    assert chat["object"] == "chat.completion" and chat["choices"][0]["message"]["role"] == "assistant"
    bad = http_client.post(f"{eagle.url}/v1/completions", json={"prompt": "x", "temperature": 0.7})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "BadRequestError"
    assert http_client.get(f"{eagle.url}/health").status_code == 200


def test_metrics_use_vllms_names_and_move_with_requests(eagle):
    before = metrics(eagle)
    r = complete(eagle, 48)
    text_of(r)
    after = metrics(eagle)
    for name in ("vllm:prompt_tokens_total", "vllm:generation_tokens_total"):
        assert metric(after, name) > metric(before, name)
    assert metric(after, "vllm:generation_tokens_total") - metric(before, "vllm:generation_tokens_total") == 48
    assert metric(after, "vllm:request_success_total", finished_reason="length") == \
        metric(before, "vllm:request_success_total", finished_reason="length") + 1
    drafts = metric(after, "vllm:spec_decode_num_drafts_total") - metric(before, "vllm:spec_decode_num_drafts_total")
    drafted = (metric(after, "vllm:spec_decode_num_draft_tokens_total")
               - metric(before, "vllm:spec_decode_num_draft_tokens_total"))
    accepted = (metric(after, "vllm:spec_decode_num_accepted_tokens_total")
                - metric(before, "vllm:spec_decode_num_accepted_tokens_total"))
    per_pos = [metric(after, "vllm:spec_decode_num_accepted_tokens_per_pos_total", position=p)
               - metric(before, "vllm:spec_decode_num_accepted_tokens_per_pos_total", position=p)
               for p in range(4)]
    assert drafts > 0 and drafted == 4 * drafts  # eagle drafts num_speculative_tokens every step
    assert 0 < accepted <= drafted and sum(per_pos) == accepted
    assert per_pos == sorted(per_pos, reverse=True)
    # every generated token but the prefill's is one draft step's bonus or an accepted draft
    assert 48 - 1 <= drafts + accepted
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:time_to_first_token_seconds_count", "vllm:e2e_request_latency_seconds_count"):
        metric(after, name)


# --- lossless ------------------------------------------------------------------------------

GREEDY_PROMPTS = [list(PROMPT.encode()), list(b"import os\nimport sys\n\n\ndef main("),
                  list(b"class Foo:\n    def __init__(self):\n        self.x = 1\n        self.")]


@pytest.fixture(scope="module")
def plain_greedy():
    """The plain (eager, no speculation) engine's greedy tokens for GREEDY_PROMPTS, 96
    each: computed once, read by each speculative config's comparison."""
    from ddlab.target.engine import Engine
    from ddlab.target.vllm_args import parse_vllm_args

    return [r.output_ids for r in Engine(parse_vllm_args(["--enforce-eager"])).generate(
        GREEDY_PROMPTS, 96)]


@pytest.mark.slow  # a server or an engine of its own; make check keeps the module's two shared servers
@pytest.mark.parametrize("flags", [EAGLE, NGRAM, ["--speculative-config",
                                                  '{"method": "eagle", "num_speculative_tokens": 15}']])
def test_greedy_tokens_equal_the_non_speculative_ones(flags, plain_greedy):
    """In-process (the same engine the server runs): batched, 96 tokens, byte for byte."""
    from ddlab.target.engine import Engine
    from ddlab.target.vllm_args import parse_vllm_args

    prompts, plain_out = GREEDY_PROMPTS, plain_greedy
    engine = Engine(parse_vllm_args(flags))
    out = [r.output_ids for r in engine.generate(prompts, 96)]
    assert out == plain_out
    m = engine.metrics
    assert m.num_drafts > 0 and 0 < m.num_accepted_tokens <= m.num_draft_tokens


def test_a_speculative_server_answers_the_plain_servers_text(eagle, plain):
    assert text_of(complete(eagle, 128)) == text_of(complete(plain, 128))


# --- the command line ----------------------------------------------------------------------

def _run(*flags, env=None, timeout=90):
    return subprocess.run([sys.executable, "-m", "ddlab.target", "--dialect", "vllm", "--host",
                           "127.0.0.1", "--port", str(free_port()), *flags], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.slow  # a server or an engine of its own; make check keeps the module's two shared servers
def test_flags_as_vllm_serve_reads_them():
    from ddlab.target.vllm_args import parse_vllm_args

    a = parse_vllm_args(["my-model", "--model", "other", "--max_num_seqs", "8", "--max-model-len", "1K",
                         "-cc", '{"cudagraph_mode": "piecewise", "cudagraph_capture_sizes": [1, 2]}',
                         "--gpu-memory-utilization", "0.5", "-sc",
                         '{"method": "ngram", "num-speculative-tokens": 3}'])
    assert (a.model_path, a.max_running_requests, a.context_length) == ("my-model", 8, 1024)
    assert (a.cudagraph_mode, a.cuda_graph_bs_decode, a.disable_cuda_graph) == ("PIECEWISE", [1, 2], False)
    assert (a.mem_fraction_static, a.spec_method, a.ngram, a.speculative_num_draft_tokens) == \
        (0.5, "ngram", (5, 5), 4)
    e = parse_vllm_args(["--enforce-eager", "-sc", '{"method": "eagle", "num_speculative_tokens": 2}'])
    assert (e.disable_cuda_graph, e.speculative_algorithm, e.speculative_dflash_block_size) == (True, "DFLASH", 3)


@pytest.mark.parametrize("flags, rc, text", [
    (["--max-num-sequences", "8"], 2, "error: unrecognized arguments: --max-num-sequences"),
    (["--max-model-len", "32Ki"], 2, "argument --max-model-len: invalid human_readable_int_or_auto value"),
    (["-sc", '{"method": "mtp", "num_speculative_tokens": 1}'], 1,
     "ValueError: Speculative method 'mtp': ddlab's target runs eagle, eagle3, ngram"),
    (["-sc", '{"method": "eagle", "num_speculative_tokens": 2, "metod": 1}'], 1,
     "1 validation error for SpeculativeConfig\nmetod\n  Unexpected keyword argument"),
    (["-sc", '{"method": "eagle"}'], 1,
     "ValueError: 1 validation error for SpeculativeConfig\n  Value error, num_speculative_tokens "
     "must be provided with speculative model unless the draft model config contains an "
     "n_predict parameter. [type=value_error, input_value=ArgsKwargs((), {'method': 'eagle'})"),
    # past the drafter's block: refused where vLLM's own validator refuses, in its words (was a
    # bare ValueError that diagnose read as unknown)
    (["-sc", '{"method": "eagle", "num_speculative_tokens": 20}'], 1,
     "  Value error, num_speculative_tokens=20: ddlab's target drafter proposes at most 15"),
    (["--max-model-len", "1000"], 1,
     "ValueError: User-specified max_model_len (1000) is greater than the derived max_model_len "
     "(max_position_embeddings=320"),
])
@pytest.mark.slow  # a server or an engine of its own; make check keeps the module's two shared servers
def test_bad_arguments_fail_before_the_engine_in_vllms_words(flags, rc, text):
    done = _run(*flags)
    assert done.returncode == rc, done.stderr[-2000:]
    assert text in done.stderr
    assert "Initializing a V1 LLM engine" not in done.stderr
    if rc == 1 and "validation error" in text:  # what a user sees after: a bad argument
        assert diagnose(done.stderr).kind == "bad_argument", diagnose(done.stderr)


@pytest.mark.slow  # a server or an engine of its own; make check keeps the module's two shared servers
def test_a_busy_port_fails_at_the_bind_before_the_engine(tmp_path, plain):
    s = Server(tmp_path, "--enforce-eager", port=plain.port)
    assert s.exit_code() == 1
    log = s.log()
    assert "OSError: [Errno 98] Address already in use" in log
    assert "non-default args:" in log and "Initializing a V1 LLM engine" not in log


# --- the faults ----------------------------------------------------------------------------

@pytest.mark.slow  # a server or an engine of its own; make check keeps the module's two shared servers
def test_replay_crash_kills_the_engine_core_as_vllms_does(tmp_path):
    s = Server(tmp_path, *EAGLE, "--debug-drop-verify-field", "positions")
    try:
        s.wait()
        assert http_client.get(f"{s.url}/v1/models").status_code == 200
        r = complete(s, 32)
        assert r.status_code == 500
        assert r.json()["error"] == {"message": CLIENT_MESSAGE, "type": "InternalServerError",
                                     "param": None, "code": 500}
        assert s.exit_code() == 1
        log = s.log()
        assert re.search(r"\(EngineCore_DP0 pid=\d+\) ERROR [\d: -]+\[core\.py:1759\] EngineCore "
                         r"encountered a fatal error\.\r\n", log)
        # the copy into the graph's input buffers, in vLLM's frames (vllm_graphs.FRAMES)
        assert re.search(r"\[core\.py:1759\]   File \"\S+/vllm/v1/engine/core\.py\", line 1743, in "
                         r"run_engine_core\r\n", log)
        assert re.search(r"\[core\.py:1759\]   File \"\S+/vllm/compilation/backends\.py\", line 87, in "
                         r"copy_and_call\r\n[^\n]*\n[^\n]*\[core\.py:1759\] AttributeError: 'NoneType' object has no "
                         r"attribute 'shape'", log)
        assert "ddlab/target" not in log  # no frame of the target's own
        assert re.search(r"\(APIServer pid=\d+\) ERROR [\d: -]+\[async_llm\.py:957\] AsyncLLM "
                         r"output_handler failed\.", log)
        assert f"vllm.v1.engine.exceptions.EngineDeadError: {ENGINE_DEAD}" in log
        assert log.index("core.py:1759") < log.index("async_llm.py:957") < log.index("INFO:     Shutting down")
    finally:
        s.stop()


@pytest.mark.slow  # a server or an engine of its own; make check keeps the module's two shared servers
def test_a_dropped_field_skipped_serves_wrong_tokens_and_stays_up(tmp_path, plain):
    s = Server(tmp_path, *EAGLE, "--debug-drop-verify-field", "seq_lens")
    try:
        s.wait()
        wrong, right = text_of(complete(s, 64)), text_of(complete(plain, 64))
        assert wrong != right
        assert http_client.get(f"{s.url}/health").status_code == 200
        assert "ERROR" not in s.log()
    finally:
        s.stop()


@pytest.mark.slow  # a server or an engine of its own; make check keeps the module's two shared servers
def test_static_buffers_that_do_not_fit_fail_the_engine_start_with_the_allocators_oom(tmp_path):
    flags = ["--max-num-seqs", "8", "--max-model-len", "8192", "--device-memory-gb", "0.5",
             "-sc", '{"method": "eagle", "num_speculative_tokens": 15}']
    done = _run(*flags, env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"})
    assert done.returncode == 1
    err = done.stderr
    assert re.search(r"\(EngineCore_DP0 pid=\d+\) ERROR [\d: -]+\[core\.py:1757\] EngineCore failed to start\.", err)
    assert re.search(r"torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate [\d.]+ GiB\.", err)
    assert ("RuntimeError: Engine core initialization failed. See root cause above. Failed core "
            "proc(s): {'EngineCore_DP0': 1}") in err
    assert "[model.py:2722] User-specified max_model_len (8192)" in err  # the allowed warning


@pytest.mark.slow  # a server or an engine of its own; make check keeps the module's two shared servers
def test_the_same_envelope_starts_with_enforce_eager(monkeypatch):
    """The capture fault's fallback: without graphs nothing is captured (in-process)."""
    from ddlab.target.engine import Engine
    from ddlab.target.vllm_args import parse_vllm_args

    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    engine = Engine(parse_vllm_args(["--max-num-seqs", "8", "--max-model-len", "8192", "--device-memory-gb",
                                     "0.5", "-sc", '{"method": "eagle", "num_speculative_tokens": 15}',
                                     "--enforce-eager"]))
    assert engine.runner.graph_runner is None and engine.context_len == 8192


@pytest.mark.parametrize("util, text", [
    ("0.0005", "ValueError: No available memory for the cache blocks. " + KV_HINT),
    ("0.004", "ValueError: To serve at least one request with the model's max seq len (320), ("),
])
@pytest.mark.slow  # a server or an engine of its own; make check keeps the module's two shared servers
def test_a_kv_cache_too_small_fails_the_engine_start_in_vllms_words(util, text):
    done = _run("--gpu-memory-utilization", util)
    assert done.returncode == 1
    assert "[core.py:1757] EngineCore failed to start." in done.stderr
    assert text in done.stderr
    assert "Engine core initialization failed" in done.stderr


@pytest.mark.slow  # a server or an engine of its own; make check keeps the module's two shared servers
def test_an_unknown_dialect_is_refused(capsys):
    from ddlab.target import main

    assert main(["--dialect", "trtllm", "--port", "1"]) == 2
    assert "argument --dialect: invalid choice: 'trtllm' (choose from 'sglang', 'vllm')" in capsys.readouterr().err
