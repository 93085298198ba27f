"""The rules that held-out round 19 of the vLLM corpus (vt01-vt26, measured once at 64f1195 with its logs)
showed missing.

Each rule is general and cited from the source that prints its text (vLLM's wheels 0.6.4.post1, 0.7.3, 0.11.1,
0.30.0, 0.33.0, 0.34.0, and 0.6.3.post1 where only it has the text; uvicorn 0.54.0; NVIDIA's CuTe DSL,
nvidia-cutlass-dsl-libs-core 4.8.1): the log that showed it is one case, a text written from the source in
another form is the other, and a text beside it that the rule must not take is a third. The source checks skip
where the wheels are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import (STAMP, assert_in_library_wheel, assert_in_wheel, read_log, reads, vllm_signature,
                     vllm_traceback, wheel_text_test)


_SHM = "vllm/distributed/device_communicators/shm_broadcast.py"
_EXECUTOR = "vllm/v1/executor/multiproc_executor.py"
_RPC = 'raise TimeoutError(f"RPC call to {method} timed out.") from e'
_DEQUEUE = "status, result = mq.dequeue(timeout=dequeue_timeout)"
_SCHEMES = "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py"
_CHECK = "self._check_scheme_supported(scheme.get_min_capability())"
_DTYPE = 'f"{model_config.dtype} is not supported for quantization "'
SOURCES = [
    # V0's multiprocessing client: the engine's death raised into each request
    ("0.6.4.post1", "vllm/engine/multiprocessing/__init__.py", "class MQEngineDeadError(RuntimeError):"),
    ("0.6.4.post1", "vllm/engine/multiprocessing/__init__.py",
     '"Engine loop is not running. Inspect the stacktrace to "\n        f"find the original error: {repr(error)}.")'),
    ("0.7.3", "vllm/engine/multiprocessing/__init__.py", "class MQEngineDeadError(RuntimeError):"),
    ("0.6.4.post1", "vllm/engine/multiprocessing/client.py", "queue.put_nowait(exception)"),
    ("0.6.4.post1", "vllm/engine/multiprocessing/client.py", "raise request_output"),
    # vt14's second look: 0.6.4's heartbeat loop checks the engine process first (0.6.3's does not)
    ("0.6.4.post1", "vllm/engine/multiprocessing/client.py", "if not self._engine_process.is_running() or ("),
    # the shared-memory queue's bare TimeoutError, and the executor's catch of it
    ("0.7.3", _SHM, "raise TimeoutError"),
    ("0.11.1", _SHM, "raise TimeoutError"),
    ("0.30.0", _SHM, "raise TimeoutError"),
    ("0.34.0", _SHM, "raise TimeoutError"),
    ("0.30.0", _EXECUTOR, _DEQUEUE + "\n                except TimeoutError as e:\n                    " + _RPC),
    ("0.33.0", _EXECUTOR, _DEQUEUE + "\n                except TimeoutError as e:\n                    " + _RPC),
    ("0.34.0", _EXECUTOR, _DEQUEUE + "\n                except TimeoutError as e:\n                    " + _RPC),
    # the OpenAI handler logs a request's error and answers it, 400 unless told
    ("0.6.4.post1", "vllm/entrypoints/openai/serving_chat.py",
     'logger.exception("Error in preprocessing prompt inputs")\n            return self.create_error_response(str(e))'),
    ("0.6.4.post1", "vllm/entrypoints/openai/serving_engine.py", "status_code: HTTPStatus = HTTPStatus.BAD_REQUEST)"),
    ("0.34.0", "vllm/entrypoints/serve/exception_handling/error_response.py",
     "status_code: HTTPStatus = HTTPStatus.BAD_REQUEST,"),
    # compressed-tensors' capability check
    ("0.6.4.post1", _SCHEMES, '"Quantization scheme is not supported for ",\n                    f"the current GPU.'),
    ("0.7.3", _SCHEMES, '"Quantization scheme is not supported for ",'),
    ("0.11.1", _SCHEMES, '"Quantization scheme is not supported for ",'),
    ("0.30.0", _SCHEMES, '"Quantization scheme is not supported for the current GPU. "'),
    ("0.33.0", _SCHEMES, '"Quantization scheme is not supported for the current GPU. "'),
    ("0.34.0", _SCHEMES, '"Quantization scheme is not supported for the current GPU. "'),
    ("0.6.4.post1", _SCHEMES, _CHECK),
    ("0.7.3", _SCHEMES, _CHECK),
    ("0.11.1", _SCHEMES, _CHECK),
    ("0.30.0", _SCHEMES, _CHECK),
    ("0.33.0", _SCHEMES, _CHECK),
    ("0.34.0", _SCHEMES, _CHECK),
    # the quantization method's dtypes
    ("0.6.4.post1", "vllm/config.py", _DTYPE),
    ("0.7.3", "vllm/config.py", _DTYPE),
    ("0.11.1", "vllm/config/vllm.py", _DTYPE),
    ("0.30.0", "vllm/config/vllm.py", _DTYPE),
    ("0.33.0", "vllm/config/vllm.py", _DTYPE),
    ("0.34.0", "vllm/config/vllm.py", _DTYPE),
    # the engine core's start-up failure, logged only while it is built
    ("0.30.0", "vllm/v1/engine/core.py", 'logger.exception("EngineCore failed to start.")'),
    ("0.34.0", "vllm/v1/engine/core.py",
     'if engine_core is None:\n                logger.exception("EngineCore failed to start.")'),
    # the KV transfer connector registering the caches while they are set up
    ("0.30.0", "vllm/v1/worker/gpu_model_runner.py", "kv_transfer_group.register_kv_caches(kv_caches)"),
    ("0.34.0", "vllm/v1/worker/gpu/kv_connector.py", "self.kv_connector.register_kv_caches(kv_caches_dict)"),
    # the logger's stamp (its level before the time)
    ("0.34.0", "vllm/logger.py", '"pid=%(process)d) %(levelname)s %(asctime)s "'),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


def test_the_texts_of_the_other_releases_and_libraries():
    """vLLM 0.6.3.post1 (the dtype check in the model loader; the heartbeat timeout of vt14's second look) and
    NVIDIA's CuTe DSL (nvidia-cutlass-dsl-libs-core 4.8.1), uvicorn's access line."""
    assert_in_library_wheel("uvicorn", "0.54.0", "uvicorn/logging.py",
                            'request_line = f"{method} {full_path} HTTP/{http_version}"')
    assert_in_wheel("0.6.3.post1", "vllm/model_executor/model_loader/loader.py", _DTYPE)
    assert_in_wheel("0.6.3.post1", "vllm/engine/multiprocessing/client.py",
                    'TimeoutError("No heartbeat received "\n                                     "from MQLLMEngine")')
    assert_in_library_wheel("nvidia-cutlass-dsl-libs-core", "4.8.1",
                            "nvidia_cutlass_dsl/dsl_packages/cutlass/cute/nvgpu/warp/mma.py",
                            'f"expects arch to be one of {self.admissible_archs}, but got {arch}",')


# --- the engine's message queue timing out on its workers ---------------------------------------------------

_CORE = ("vllm/v1/engine/core.py", 1045, "run_busy_loop", "self._process_engine_step()")
_GET_RESPONSE = (_EXECUTOR, 531, "get_response", _DEQUEUE)


def test_the_shared_memory_queues_timeout_is_a_hang():
    """vt05, vt06: shm_broadcast's bare TimeoutError, its direct-cause chain into the busy loop cut; vt04: a
    traceback whose first frame is the executor's get_response at the dequeue, cut there (get_response
    catches only the TimeoutError there). Read unknown before."""
    for name in ("vt04.log", "vt05.log", "vt06.log"):
        assert reads(read_log(name)) == (True, "hang", "serving"), name
        assert vllm_signature(read_log(name)) == "vllm_queue_timeout", name
    raised = vllm_traceback(_GET_RESPONSE, (_SHM, 831, "timeout_ms", "raise TimeoutError"), exc="TimeoutError")
    assert reads(raised)[:2] == (True, "hang")


def test_other_timeouts_and_a_cut_traceback_below_get_response_are_not_it():
    """A TimeoutError raised elsewhere (a store, a lock), and a traceback that only passes through
    get_response (its first frame above it: another exception, propagated) are not this rule."""
    other = vllm_traceback(("vllm/distributed/utils.py", 200, "wait", "raise TimeoutError"), exc="TimeoutError")
    assert vllm_signature(other) != "vllm_queue_timeout"
    passing = vllm_traceback(_CORE, _GET_RESPONSE, exc=None)
    assert vllm_signature(passing) != "vllm_queue_timeout"


# --- V0's client raising the engine's death into the requests ----------------------------------------------

_V0_HEAD = "ERROR 11-12 10:29:35 [serving_chat.py:948] "
_STREAM = ("vllm/entrypoints/openai/serving_chat.py", 517, "chat_completion_stream_generator",
           "async for res in result_generator:")
_PROCESS = ("vllm/engine/multiprocessing/client.py", 679, "_process_request", "raise request_output")


def test_the_mq_clients_engine_dead_error_is_a_crash_while_serving():
    """vt13, vt15: the stream generator's traceback ending in "MQEngineDeadError: Engine loop is not running";
    vt14: the same inside an exception group, then uvicorn's ASGI traceback (its kind disputed: the heartbeat
    timeout does not tell a hung engine from a dead one). Read as one request's error before."""
    for name in ("vt13.log", "vt14.log", "vt15.log"):
        assert reads(read_log(name)) == (True, "unknown", "serving"), name
        assert vllm_signature(read_log(name)) == "vllm_engine_dead", name
    dead = vllm_traceback(_STREAM, _PROCESS, head=_V0_HEAD,
                          exc="vllm.engine.multiprocessing.MQEngineDeadError: Engine loop is not running. Inspect "
                              "the stacktrace to find the original error: RuntimeError('Engine loop has died').")
    assert reads(dead) == (True, "unknown", "serving")


def test_a_stream_generators_own_error_stays_one_requests():
    other = (_V0_HEAD + "Error in chat completion stream generator.\n"
             + vllm_traceback(_STREAM, ("vllm/entrypoints/openai/serving_chat.py", 600, "f", "x = y[0]"),
                              head=_V0_HEAD, exc="IndexError: list index out of range"))
    assert reads(other)[:2] == (False, "request_error")


# --- a request's error, answered with a 4xx ---------------------------------------------------------------

_API = "(APIServer pid=1) "
_ANSWER = _API + 'INFO:     10.0.0.8:42562 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'


def test_an_error_answered_with_a_4xx_is_one_requests():
    """vt22: a ValueError of the chat template, then the access line answering the request 400, then the next
    request's "Error in preprocessing prompt inputs" traceback, cut; vt23: json's JSONDecodeError answered 400.
    Read as a crash at launch before (the exception line and the cut traceback taken as one)."""
    for name in ("vt22.log", "vt23.log"):
        assert reads(read_log(name)) == (False, "request_error", "serving"), name
    stamp = _API + "ERROR 03-04 14:55:22 [serving.py:315] "
    answered = vllm_traceback(("vllm/renderers/mistral.py", 34, "safe_apply_chat_template", "return f()"),
                              head=stamp, exc="ValueError: Unexpected role 'user' after role 'tool'") + _ANSWER
    assert reads(answered)[:2] == (False, "request_error")
    header = (stamp + "Error in preprocessing prompt inputs\n"
              + vllm_traceback(("vllm/renderers/mistral.py", 34, "safe_apply_chat_template", "return f()"),
                               head=stamp, exc=None))
    assert reads(header)[:2] == (False, "request_error")


def test_an_error_not_answered_right_after_is_still_a_crash():
    """The same error with no access line right under it (another record between: the engine's death), or a
    traceback with no request handler's line above it, is not one request's."""
    stamp = _API + "ERROR 03-04 14:55:22 [core.py:315] "
    error = vllm_traceback(("vllm/v1/engine/core.py", 100, "run", "f()"), head=stamp,
                           exc="ValueError: Unexpected role 'user' after role 'tool'")
    assert reads(error)[0] is True
    between = error + stamp + "EngineCore encountered a fatal error.\n" + _ANSWER
    assert reads(between)[0] is True
    assert reads(vllm_traceback(("vllm/v1/engine/core.py", 100, "run", "f()"), head=stamp, exc=None))[0] is True


# --- compressed-tensors' GPU capability check ------------------------------------------------------------

_GET_QUANT = (_SCHEMES, 153, "get_quant_method", "quant_scheme = self.get_scheme(layer=layer, layer_name=prefix)")
_GET_SCHEME = (_SCHEMES, 994, "get_scheme", _CHECK)


def test_the_quantization_schemes_capability_check_is_unsupported_gpu():
    """vt21: the check's "raise RuntimeError(" and "RuntimeError: (" (V0's tuple message cut); vt20: two TP
    workers interleaved, cut at the check's call. Read unknown at launch before."""
    for name in ("vt20.log", "vt21.log"):
        assert reads(read_log(name)) == (True, "unsupported_gpu", "load_weights"), name
    whole = vllm_traceback(_GET_QUANT, _GET_SCHEME, (_SCHEMES, 410, "_check_scheme_supported", "raise RuntimeError("),
                           exc="RuntimeError: Quantization scheme is not supported for the current GPU. Min "
                               "capability: 80. Current capability: 75.")
    assert reads(whole)[:2] == (True, "unsupported_gpu")
    v0 = ("RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min capability: 75. ', "
          "'Current capability: 70.')\n")
    assert reads(v0, family="vllm")[:2] == (True, "unsupported_gpu")


def test_another_error_in_get_scheme_is_not_the_capability_check():
    """get_scheme's own refusal of a scheme it has no kernel for is another error."""
    other = vllm_traceback(_GET_QUANT, (_SCHEMES, 947, "get_scheme", "raise NotImplementedError("),
                           exc="NotImplementedError: No compressed-tensors compatible scheme was found for "
                               "layer_name='model.layers.0.mlp'")
    assert vllm_signature(other) not in ("vllm_quant_scheme_gpu", "vllm_quant_scheme_check")


# --- a dtype the quantization method does not take ------------------------------------------------------

def test_a_dtype_the_quantization_method_refuses_is_a_bad_argument():
    """vt19: "torch.bfloat16 is not supported for quantization method gptq. Supported dtypes: [torch.float16]"
    (0.6.3's model loader, the CPU build); read unknown before. The config's check in V1 says the same."""
    assert reads(read_log("vt19.log")) == (True, "bad_argument", "load_weights")
    v1 = vllm_traceback(("vllm/config/vllm.py", 902, "_get_quantization_config", "raise ValueError("),
                        exc="ValueError: torch.float32 is not supported for quantization method awq. Supported "
                            "dtypes: [torch.float16, torch.bfloat16]")
    assert reads(v1)[:2] == (True, "bad_argument")


def test_an_unknown_quantization_method_is_not_a_dtype_refusal():
    other = vllm_traceback(("vllm/config/model.py", 100, "_verify_quantization", "raise ValueError("),
                           exc="ValueError: Unknown quantization method: foo. Must be one of ['awq', 'gptq'].")
    assert vllm_signature(other) != "vllm_quant_dtype"


# --- CuTe DSL refusing the GPU's architecture ------------------------------------------------------------

def test_a_cute_dsl_kernel_refusing_the_arch_is_unsupported_gpu():
    """vt16: "OpError: expects arch to be one of ['sm_120a'], but got Arch.sm_121a" (a b12x MoE kernel on
    DGX Spark); read unknown before."""
    assert reads(read_log("vt16.log"))[:2] == (True, "unsupported_gpu")
    newer = vllm_traceback(("cutlass/cute/nvgpu/warp/mma.py", 456, "__post_init__", "raise DSLUserCodeError("),
                           exc="cutlass.base_dsl.common.DSLUserCodeError: expects arch to be one of [Arch.sm_100a, "
                               "Arch.sm_103a], but got Arch.sm_90a")
    assert reads(newer)[:2] == (True, "unsupported_gpu")


def test_another_cute_dsl_refusal_is_not_the_arch():
    other = vllm_traceback(("cutlass/cute/nvgpu/warp/mma.py", 470, "__post_init__", "raise DSLUserCodeError("),
                           exc="cutlass.base_dsl.common.DSLUserCodeError: expects the 'shape_mnk' Shape "
                               "to be one of [(16, 8, 64)], but got (16, 8, 32)")
    assert vllm_signature(other) != "vllm_cute_dsl_arch"


# --- an INFO record glued under an exception line --------------------------------------------------------

def test_an_info_record_under_nixls_error_is_no_part_of_its_message():
    """vt25: "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND" in register_kv_caches, then the Ray executor's
    INFO line read as the message's second line; read unknown at launch before. The KV caches' registration
    is their set-up: memory_pool."""
    assert reads(read_log("vt25.log")) == (True, "pd_transfer", "memory_pool")
    tag = "(EngineCore_0 pid=5) "
    glued = (tag + '  File "/usr/local/lib/python3.12/dist-packages/nixl/_api.py", line 266, in register_memory\n'
             + tag + "    self.agent.registerMem(reg_descs, handle_list)\n"
             + tag + "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND\n"
             + tag + "INFO 08-07 04:48:56 [ray_distributed_executor.py:120] Shutting down Ray distributed executor.\n")
    assert reads(glued)[:2] == (True, "pd_transfer")


def test_an_error_records_own_lines_still_continue_its_message():
    """A message's second line logged in the same ERROR record (torch's CUDA hint) is still its message."""
    text = (STAMP + "RuntimeError: CUDA error: an illegal memory access was encountered\n"
            + STAMP + "CUDA kernel errors might be asynchronously reported at some other API call, so the "
                      "stacktrace below might be incorrect.\n")
    assert diagnose(text).cause.startswith("RuntimeError: CUDA error: an illegal memory access")
    assert "asynchronously reported" in "\n".join(diagnose(text).evidence)


# --- "EngineCore failed to start." after the error keeps it in the start-up ------------------------------

def test_engine_core_failed_to_start_after_the_error_keeps_the_startup():
    """vt02: bare "Failed: Cuda error ... illegal memory access" lines, a worker's death, then "EngineCore
    failed to start.": the start-up, not serving (the error's message no longer runs over the INFO lines)."""
    assert reads(read_log("vt02.log"))[:3] == (True, "cuda_illegal_access", "launch")
    fatal = ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:1735 'an illegal memory access was "
             "encountered'\n" + STAMP + "EngineCore encountered a fatal error.\n")
    assert reads(fatal)[2] == "serving"
