"""The rules that held-out round 13 of the vLLM corpus (vn01-vn31, measured once at 7e07903) showed
missing.

Each rule is general and cited from the source that prints its text (vLLM's wheels 0.6.4.post1, 0.7.3,
0.30.0, 0.33.0, 0.34.0; ROCm's HIP and ROCr runtimes; Ray's task error; ptxas through Triton; the Neuron
compiler's wrapper): the log that showed it is one case, a text written from the source in another form
is the other, and a text beside it that the rule must not take is a third. The source checks are a test
of their own, which skips where the wheels are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from ddlab.diagnosis.vllm_log import detect_family
from fieldkit import STAMP, read_log, reads, vllm_traceback, wheel_text_test


SOURCES = [
    # the LoRA adapter's rank check
    ("0.6.4.post1", "vllm/lora/worker_manager.py", 'f"LoRA rank {lora.rank} is greater than max_lora_rank "'),
    ("0.7.3", "vllm/lora/peft_helper.py", 'f"LoRA rank {self.r} is greater than max_lora_rank"'),
    ("0.30.0", "vllm/lora/peft_helper.py", 'f"LoRA rank {self.r} is greater than max_lora_rank"'),
    ("0.33.0", "vllm/lora/peft_helper.py", 'f"LoRA rank {max_rank} is greater than max_lora_rank"'),
    ("0.34.0", "vllm/lora/peft_helper.py", 'f"LoRA rank {max_rank} is greater than max_lora_rank"'),
    # V0's Mooncake pipe
    ("0.7.3", "vllm/distributed/kv_transfer/kv_pipe/mooncake_pipe.py", 'raise Exception("Transfer Return Error")'),
    # V0's launcher on a dead engine, its engine loop ending
    ("0.6.4.post1", "vllm/entrypoints/launcher.py", 'logger.fatal("MQLLMEngine is already dead, terminating server "'),
    ("0.7.3", "vllm/entrypoints/launcher.py", 'logger.fatal("AsyncLLMEngine is already dead, terminating server "'),
    ("0.6.4.post1", "vllm/engine/async_llm_engine.py", '"Task finished unexpectedly. This should never happen! "'),
    ("0.7.3", "vllm/engine/async_llm_engine.py", '"Task finished unexpectedly. This should never happen! "'),
    # get_config's refusal and its hint
    ("0.30.0", "vllm/transformers_utils/config.py", "\"   - For Mistral models: ensure the presence of a \""),
    ("0.34.0", "vllm/transformers_utils/config.py", '"Invalid repository ID or local directory specified:"'),
    # the model-parallel groups' set-up line
    ("0.30.0", "vllm/distributed/parallel_state.py", '"rank %s in world size %s is assigned as "'),
    ("0.34.0", "vllm/distributed/parallel_state.py", '"rank %s in world size %s is assigned as "'),
    # NIXL's handshake failing for one request (vLLM 0.11.1: where the lead's wheels are not, this skips)
    ("0.11.1", "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py",
     '"Handshake failed for request %s, marking blocks as invalid", req_id'),
    # one request's server error answered 500
    ("0.34.0", "vllm/entrypoints/serve/exception_handling/error_response.py",
     "status_code = HTTPStatus.INTERNAL_SERVER_ERROR"),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


# --- ROCm: HIP's "invalid device function" (no build for this GPU) and ROCr's page fault --------

def test_hips_invalid_device_function_is_an_unsupported_gpu():
    """vn05 (a V0 traceback in the rotary embedding's first tensor), vn06 (an engine core's
    torch.AcceleratorError): "HIP error: invalid device function", hipErrorInvalidDeviceFunction, a
    kernel with no code object for this GPU; read unknown before."""
    assert reads(read_log("vn05.log"))[:2] == (True, "unsupported_gpu")
    assert reads(read_log("vn06.log"))[:2] == (True, "unsupported_gpu")
    frames = (("vllm/v1/worker/gpu_model_runner.py", 300, "load_model", "self.model = get_model(...)"),)
    for text in ("RuntimeError: HIP error: invalid device function", "torch.AcceleratorError: CUDA error: invalid "
                 "device function"):
        assert reads(vllm_traceback(*frames, exc=text))[:2] == (True, "unsupported_gpu"), text
    # HIP's "invalid device ordinal" (a GPU index that does not exist) is no missing build
    assert reads(vllm_traceback(*frames, exc="RuntimeError: HIP error: invalid device ordinal"))[1] \
        != "unsupported_gpu"


def test_rocrs_memory_access_fault_is_an_illegal_access_at_the_phase_shown():
    """vn21: ROCr's "Memory access fault by GPU node-1 ... Reason: Page not present or supervisor
    privilege." after the engine core's model-parallel set-up line (initialize_model_parallel: start-up),
    then the API server's traceback; read unknown before (SGLang's registry read it, vLLM's did not)."""
    assert reads(read_log("vn21.log")) == (True, "cuda_illegal_access", "launch")
    line = ("Memory access fault by GPU node-2 (Agent handle: 0x55d1) on address 0x7f00. Reason: Page not "
            "present or supervisor privilege.\n")
    assert reads(line, family="vllm")[:2] == (True, "cuda_illegal_access")
    # the same words with no GPU node are not ROCr's line
    assert reads("Memory access fault in the tokenizer cache\n", family="vllm")[1] != "cuda_illegal_access"


# --- LoRA: an adapter's rank above --max-lora-rank ----------------------------------------------

def test_a_lora_rank_above_the_max_is_a_bad_argument():
    """vn09: "Worker failed with error 'LoRA rank 32 is greater than max_lora_rank 16.'" relayed by the
    engine core (two lines); read unknown before. An adapter loads with a request: serving."""
    assert reads(read_log("vn09.log")) == (True, "bad_argument", "serving")
    assert reads(STAMP + "ValueError: LoRA rank 64 is greater than max_lora_rank 8.\n", family="vllm")[:2] \
        == (True, "bad_argument")
    # a rank within the limit, logged, is no refusal
    assert reads(STAMP.replace("ERROR", "INFO") + "LoRA rank 8, max_lora_rank 16\n", family="vllm")[1] \
        != "bad_argument"


# --- V0's Mooncake pipe: a KV transfer's error kills the engine ------------------------------------

def test_v0_mooncake_pipes_transfer_error_is_a_pd_transfer():
    """vn29: the MQ engine's traceback from mooncake_pipe.py's transfer_sync, "Exception: Transfer
    Return Error", the server shutting down; read unknown at launch before."""
    assert reads(read_log("vn29.log"))[:2] == (True, "pd_transfer")
    frames = (("vllm/distributed/kv_transfer/kv_pipe/mooncake_pipe.py", 164, "transfer_sync",
               'raise Exception("Transfer Return Error")'),)
    assert reads(vllm_traceback(*frames, exc="Exception: Transfer Return Error"))[:2] == (True, "pd_transfer")
    # another exception whose message merely contains the words is not this
    assert reads(vllm_traceback(("vllm/worker/worker.py", 10, "f", "g()"),
                                exc="Exception: Transfer Return Error count exceeded"))[1] != "pd_transfer"


# --- Ray: a worker's error re-raised as RayTaskError(Cause) ---------------------------------------

def test_a_ray_task_error_names_its_cause():
    """vn15: a V0 Ray executor's traceback ending in "ray.exceptions.RayTaskError(DistBackendError):
    ray::RayWorkerWrapper.execute_method() ..." (Ray names the class after the task's error); the
    exception line was not read as one before: unknown at launch."""
    assert reads(read_log("vn15.log")) == (True, "nccl", "serving")
    frames = (("vllm/executor/ray_gpu_executor.py", 557, "_driver_execute_model_async",
               "results = await asyncio.gather(*tasks)"),)
    text = vllm_traceback(*frames, exc="ray.exceptions.RayTaskError(DistBackendError): ray::RayWorkerWrapper."
                                       "execute_method() (pid=1, ip=10.0.0.1)")
    assert reads(text)[:2] == (True, "nccl")
    # the wrapper with another cause keeps that cause's reading, not NCCL's
    assert reads(text.replace("DistBackendError", "ValueError"))[1] != "nccl"


# --- V0's engine death met by a request ------------------------------------------------------------

def test_v0s_dead_engine_lines_are_a_crash_while_serving():
    """vn17: a sidecar's "[VllmSidecar ID]: <ISO time> 1 stdout: " prefix on V0's "MQLLMEngine is
    already dead, terminating server process" and 500 lines (the name with an instance id was not
    peeled, the family not seen); read one request's error before. vn19: V0's "AsyncEngineDeadError:
    Task finished unexpectedly." (the engine loop, started by the first request, ended); read at
    launch before."""
    assert reads(read_log("vn17.log")) == (True, "unknown", "serving")
    assert reads(read_log("vn19.log")) == (True, "unknown", "serving")
    line = "CRITICAL 11-12 19:15:08 launcher.py:93] AsyncLLMEngine is already dead, terminating server process\n"
    assert reads(line, family="vllm") == (True, "unknown", "serving")
    assert detect_family("[Sidecar a1]: 2024-11-13T03:15:08.672Z 1 stderr: " + line) == "vllm"
    # V0's launcher answering a request that raised another error is no dead engine
    assert reads('INFO:     127.0.0.1:1 - "GET /v1/models HTTP/1.1" 200 OK\n', family="vllm")[0] is False


# --- get_config's refusal pasted alone -------------------------------------------------------------

def test_get_configs_refusal_alone_is_vllms_model_not_found():
    """vn24: "ValueError: Invalid repository ID or local directory specified: '...'." and its hint lines,
    nothing else: read as SGLang's log (no vLLM mark) and unknown before."""
    assert reads(read_log("vn24.log")) == (True, "model_not_found", "launch")
    assert detect_family(read_log("vn24.log")) == "vllm"
    assert detect_family("ValueError: Invalid repository ID\n") == "sglang"


# --- a lone 500 access line ------------------------------------------------------------------------

def test_a_lone_500_access_line_is_one_requests_error():
    """vn18: an idle V1 server's metrics lines, then one chat completion answered "500 Internal Server
    Error"; said nothing before (SGLang's access-line rule was not in vLLM's registry)."""
    assert reads(read_log("vn18.log"))[:2] == (False, "request_error")
    line = '(APIServer pid=1) INFO:     10.0.0.1:1 - "POST /v1/completions HTTP/1.1" 503 Service Unavailable\n'
    assert reads(line, family="vllm")[:2] == (False, "request_error")
    # a GET (a probe) answered 500, or a 200, is not a request's error
    assert reads(line.replace('"POST /v1/completions', '"GET /health'), family="vllm")[1] != "request_error"
    assert reads(line.replace("503 Service Unavailable", "200 OK"), family="vllm")[1] != "request_error"


# --- kernel builds: ptxas' diagnostic, the Neuron compiler ----------------------------------------

def test_ptxas_diagnostic_and_neuronx_cc_failing_are_kernel_builds():
    """vn31: one engine-core line carrying ptxas' "ptxas /tmp/X.ptx, line 661; error   : Modifier
    '.evict_last' cannot be combined with modifier '.cg'" (not crashed before); vn30: libneuronxla's
    call_neuron_compiler raising "subprocess.CalledProcessError: Command '['neuronx-cc', 'compile', ..."
    (unknown before)."""
    assert reads(read_log("vn31.log"))[:2] == (True, "kernel_compile")
    assert reads(read_log("vn30.log"))[:2] == (True, "kernel_compile")
    assert reads(STAMP + "ptxas /tmp/a.ptx, line 3; error   : Unknown symbol 'x'\n", family="vllm")[:2] \
        == (True, "kernel_compile")
    # ptxas' warning is no failure; another program's CalledProcessError is not neuronx-cc's
    assert reads(STAMP.replace("ERROR", "WARNING") + "ptxas /tmp/a.ptx, line 3; warning : x\n",
                 family="vllm")[1] != "kernel_compile"
    other = vllm_traceback(("vllm/utils.py", 1, "f", "g()"),
                           exc="subprocess.CalledProcessError: Command '['nvidia-smi']' returned non-zero exit "
                               "status 9.")
    assert reads(other)[1] != "kernel_compile"


# --- PD: NIXL's handshake failing for one request --------------------------------------------------

def test_nixls_handshake_failing_for_a_request_is_that_requests_error():
    """vn08: a decode worker's "RuntimeError: Remote NIXL agent engine ID mismatch. ..." then
    "Handshake failed for request chatcmpl" (nixl_connector.py's request_ready: that request's blocks
    are marked invalid, the engine serves on); read a crash of unknown cause before."""
    assert reads(read_log("vn08.log")) == (False, "request_error", "serving")
    head = "(Worker_DP0 pid=7) ERROR 10-16 17:22:56 [nixl_connector.py:1112] "
    text = vllm_traceback(("vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py", 1107, "request_ready",
                           "f.result()"), exc="TimeoutError: handshake timed out", head=head)
    assert reads(head + "Handshake failed for request cmpl-1, marking blocks as invalid\n" + text,
                 family="vllm")[:2] == (False, "request_error")
    # the engine core dying beside it is still a crash
    dead = STAMP + "EngineCore encountered a fatal error.\n" + vllm_traceback(
        ("vllm/v1/engine/core.py", 900, "run_busy_loop", "self._process_engine_step()"),
        exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    assert reads(head + "Handshake failed for request cmpl-1, marking blocks as invalid\n" + dead,
                 family="vllm")[:2] == (True, "cuda_oom")


# --- PD: vllm-ascend's Mooncake connector failing one request's KV read -----------------------------

def test_vllm_ascends_mooncake_transfer_failing_for_a_request_is_that_requests_error():
    """vn27 ("Mooncake transfer failed for request R" and "Failed to transfer KV cache for request R:
    Mooncake transfer failed, ret: -1" after the transport's connect errors) and vn28 (every worker's
    "Mooncake transfer failed for request R" after "Sync batch data transfer timeout"): the connector's
    transfer thread logs the failure and takes the next request (vllm-ascend _handle_request); said
    nothing before."""
    assert reads(read_log("vn27.log"))[:2] == (False, "request_error")
    assert reads(read_log("vn28.log"))[:2] == (False, "request_error")
    head = "(EngineCore_DP0 pid=5) ERROR 01-06 06:43:02 [mooncake_connector.py:441] "
    assert reads(head + "Failed to transfer KV cache for request cmpl-9: Mooncake transfer failed, ret: -1\n",
                 family="vllm")[:2] == (False, "request_error")
    # the exception's own words, with no request named, are not the connector's line
    assert reads(head + "RuntimeError: Mooncake transfer failed, ret: -1\n", family="vllm")[1] != "request_error"
