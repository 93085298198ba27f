"""What held-out round 39 of the vLLM corpus (w3901-w3919, measured once at e277b68 with its logs 32d94f6)
showed: four misses (crashed 17/19, kind 16/19, phase 7/8), read again after the fold.

- w3903 (fixed): a vLLM 0.8.5.post1 server refuses two over-long chat requests (400) and serves on; a later
  request aborted by its client is logged "Aborted request chatcmpl-....", the frontend's INFO record (0.8.5.post1
  v1/engine/async_llm.py:411; "Aborted request(s) %s." from 0.10.1.1, 0.23.0 :721). vLLM's INFO stamp is peeled
  as a quiet record's (``Line.record``), and ``exits.exit_of`` took the rest for bash's "Aborted" (a process
  killed by SIGABRT): a line that carried vLLM's stamp is a record of its logger, never a shell's word.
- w3910 (fixed): a workflow's ``tail -f`` of several logs ("==> logs/X.out <==" before each file's part, GNU
  coreutils src/tail.c write_header); the 500 answers and "Exception in ASGI application" tracebacks are the RAG
  proxy's (its file's part, frames through /app/rag_proxy.py, no vLLM stamp in that file): where some files'
  parts carry vLLM's stamp, the others are other programs (``vllm_records.only_vllm_files``), as docker
  compose's other services are (round 28).
- w3914 (fixed, phase): an ms-swift rollout's excerpt: vLLM's "Engine core proc EngineCore_DP1 died
  unexpectedly, shutting down client." and the caller's traceback, cut, into LLMEngine.add_request. A request
  is added only to a built engine (the client starts its monitor, and returns, once every engine has said it
  is ready: 0.10.2 v1/engine/core_client.py:492-510): add_request frames are the serving step's.
- w3908 (kind disputed, crashed left a miss): a vLLM 0.22.0 start stopped by the operator's Ctrl-C while the
  engine loaded the weights; asyncio's SIGINT handler raises KeyboardInterrupt in the API server's wait for the
  engine's ready message (0.22.0 core_client.py:609-616), and no error of vLLM's precedes it (as w3506 and
  w3605, there SIGTERM).

The tests pin the readings: each corpus log, the source's text in another form, and near misses that must not
read the same way (the fixes' positive tests fail on e277b68's code). The source checks skip where the wheels
are not unpacked (CI).
"""

from __future__ import annotations

import json

from fieldkit import VLLM_REAL, read_log, reads, vllm_signature, vllm_traceback, wheel_text_test

from ddlab.diagnosis.diagnosis import diagnose

_ASYNC = "vllm/v1/engine/async_llm.py"
_CLIENT = "vllm/v1/engine/core_client.py"

test_each_rules_text_is_vllms_own = wheel_text_test([
    # w3903: the frontend's record of a request aborted (one id, later several)
    ("0.8.5.post1", _ASYNC, 'logger.info("Aborted request %s.", request_id)'),
    ("0.10.1.1", _ASYNC, 'logger.info("Aborted request(s) %s.", ",".join(request_ids))'),
    ("0.13.0", _ASYNC, 'logger.info("Aborted request(s) %s.", ",".join(request_ids))'),
    ("0.23.0", _ASYNC, 'logger.info("Aborted request(s) %s.", ",".join(request_ids))'),
    # w3914: requests are added to a built engine; the client's monitor starts once its engines are ready
    ("0.10.2", "vllm/v1/engine/llm_engine.py", "    def add_request("),
    ("0.10.2", _ASYNC, "    async def add_request("),
    ("0.10.2", "vllm/entrypoints/llm.py", "    def _add_request("),
    ("0.34.0", "vllm/v1/engine/llm_engine.py", "    def add_request("),
    ("0.10.2", _CLIENT, "# Wait for ready messages from each engine on the input socket."),
    ("0.10.2", _CLIENT, "# Start monitoring engine core processes for unexpected failures\n"
                        "            self.start_engine_core_monitor()"),
    ("0.10.2", _CLIENT, '"Engine core proc %s died unexpectedly, "'),
    ("0.13.0", _CLIENT, '"Engine core proc %s died unexpectedly, shutting down client."'),
    # w3908: the API server waits for the engine's ready message, and its finalizer joins the engine
    ("0.22.0", _CLIENT, "# Wait for ready messages from each engine on the input socket."),
    ("0.22.0", _CLIENT, "        finally:\n            if not success:\n                self._finalizer()"),
])


def _manifest(log_id: str) -> dict:
    logs = json.loads((VLLM_REAL / "manifest.json").read_text())["logs"]
    return next(log for log in logs if log["id"] == log_id)


_SERVING = ("INFO 05-19 19:30:00 [api_server.py:1090] Starting vLLM API server on http://0.0.0.0:8000\n"
            "INFO:     Application startup complete.\n"
            'INFO:     127.0.0.1:42392 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
            "INFO 05-19 19:37:57 [async_llm.py:252] Added request chatcmpl-1.\n")
_AFTER = ("INFO 05-19 19:48:07 [loggers.py:111] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
          "throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit "
          "rate: 6.1%\n")


def test_a_request_refused_then_one_aborted_is_a_request_error_not_a_shell_abort():
    """w3903: two over-long requests refused (400), later one aborted by its client; the server serves on."""
    log = read_log("w3903.log")
    found = diagnose(log)
    assert (found.crashed, found.kind, found.phase) == (False, "request_error", "serving")
    assert found.exit_status is None


def test_the_newer_releases_aborted_records_are_vllms_not_the_shells():
    """0.23.0's "Aborted request(s) a,b." under the API server's tag, and 0.8.5's under a bare stamp: a healthy
    server's records."""
    newer = ("(APIServer pid=1) INFO 05-19 19:30:00 [api_server.py:1090] Starting vLLM API server 0 on "
             "http://0.0.0.0:8000\n(APIServer pid=1) INFO:     Application startup complete.\n"
             "(APIServer pid=1) INFO 05-19 19:47:57 [async_llm.py:721] Aborted request(s) cmpl-1,cmpl-2.\n"
             "(APIServer pid=1) " + _AFTER)
    assert reads(newer)[:2] == (False, None)
    assert diagnose(newer).exit_status is None
    older = _SERVING + "INFO 05-19 19:47:57 [async_llm.py:411] Aborted request chatcmpl-1.\n" + _AFTER
    assert reads(older)[:2] == (False, None)


def test_the_shells_aborted_after_vllms_lines_is_still_a_death():
    """The near miss: bash's report of a process killed by SIGABRT, a line of its own under vLLM's."""
    died = _SERVING + "Aborted (core dumped)\n"
    found = diagnose(died)
    assert found.crashed
    assert found.exit_status == "Aborted (core dumped)"


_ASGI = ('INFO:     10.0.0.5:56068 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
         "ERROR:    Exception in ASGI application\nTraceback (most recent call last):\n"
         '  File "/opt/conda/lib/python3.10/site-packages/uvicorn/protocols/http/httptools_impl.py", line 401, '
         "in run_asgi\n    result = await app(  # type: ignore[func-returns-value]\n"
         '  File "/app/proxy.py", line 42, in get_tokenizer\n'
         "    _tokenizer = AutoTokenizer.from_pretrained(MODEL_NAME, use_fast=True)\n"
         "OSError: Incorrect path_or_model_id: '/models/x/'. Please provide either the path to a local folder "
         "or the repo_id of a model on the Hub.\n")


def test_a_tails_other_files_requests_are_not_vllms():
    """w3910, and a two-file ``tail -f`` (vLLM's log and a proxy's) in another order: the proxy's 500s and its
    ASGI traceback are its own."""
    assert reads(read_log("w3910.log"))[:2] == (False, None)
    tail = ("==> logs/vllm.out <==\n" + _SERVING + "\n==> logs/proxy.out <==\n" + _ASGI
            + "\n==> logs/vllm.out <==\n" + _AFTER)
    assert reads(tail)[:2] == (False, None)
    assert vllm_signature(tail) is None


def test_vllms_own_files_asgi_error_or_an_untailed_paste_still_reads_as_a_request_error():
    """Near misses: the same traceback in vLLM's own file's part (one file, or beside another), or pasted with
    no ``tail`` headers, is the server's request error."""
    own = "==> logs/vllm.out <==\n" + _SERVING + _ASGI + "\n==> logs/proxy.out <==\nproxy up\n"
    assert reads(own)[:2] == (False, "request_error")
    assert reads(_SERVING + _ASGI)[:2] == (False, "request_error")


_DIED = ("ERROR 01-29 08:37:48 [core_client.py:564] Engine core proc EngineCore_DP1 died unexpectedly, shutting "
         "down client.\n")


def test_an_engine_death_while_a_request_is_added_is_at_serving():
    """w3914 (ms-swift's rollout calling LLMEngine.add_request, cut), and a trainer's rollout adding a request
    to an AsyncLLM (add_request -> _add_request, 0.10.2 v1/engine/async_llm.py:266, :308), cut likewise."""
    assert reads(read_log("w3914.log")) == (True, "unknown", "serving")
    rollout = _DIED + vllm_traceback(
        ("trainer/rollout.py", 88, "rollout_step", "await self.engine.add_request(rid, prompt, params)"),
        ("vllm/v1/engine/async_llm.py", 300, "add_request", "await self._add_request(request, None, None, 0, queue)"),
        ("vllm/v1/engine/async_llm.py", 324, "_add_request", "await self.engine_core.add_request_async(request)"),
        exc=None, head="")
    assert reads(rollout)[2] == "serving"


def test_a_death_in_the_engines_start_is_not_at_serving():
    """The near miss: the same death notice over a traceback through the engine's start (the KV cache's
    profiling) reads its startup phase, not serving."""
    start = _DIED + vllm_traceback(
        ("vllm/entrypoints/llm.py", 285, "__init__", "self.llm_engine = LLMEngine.from_engine_args("),
        ("vllm/v1/engine/core.py", 83, "__init__", "self._initialize_kv_caches(vllm_config)"),
        ("vllm/v1/engine/core.py", 141, "_initialize_kv_caches", "self.model_executor.determine_available_memory())"),
        exc=None, head="")
    assert reads(start)[2] == "memory_pool"


def test_a_start_stopped_by_ctrl_c_is_no_crash_and_its_kind_is_disputed():
    """w3908: the API server's KeyboardInterrupt from asyncio's SIGINT handler while the engine loads the
    weights, with no error of vLLM's before it; the manifest disputes the label's kind (crashed stays a miss)."""
    found = diagnose(read_log("w3908.log"))
    assert (found.crashed, found.kind, found.phase) == (False, None, "load_weights")
    assert _manifest("w3908")["kind_disputed"] == ["unknown", None]


def test_the_rounds_other_logs_read_as_labelled():
    """The fifteen logs the measurement agreed with, crashed and kind (and the phase where the log shows it)."""
    for log_id in ("w3901", "w3902", "w3904", "w3905", "w3906", "w3907", "w3909", "w3911", "w3912", "w3913",
                   "w3915", "w3916", "w3917", "w3918", "w3919"):
        log = _manifest(log_id)
        got = reads(read_log(f"{log_id}.log"))
        assert got[0] == log["crashed"], log_id
        assert (got[1] if log["crashed"] else None) == log["kind"], log_id
        if log["phase_in_log"]:
            assert got[2] == log["phase"], log_id
