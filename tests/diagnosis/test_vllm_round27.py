"""The rules that held-out round 27 of the vLLM corpus (w2701-w2711, measured once at 00fd22b with its logs
20b74a0) showed missing: vLLM's CUTLASS scaled-mm finding no kernel compiled for the GPU's compute capability
(w2705), XLA's TPU compiler running out of a kernel's scoped vector memory at compile time (w2706), and a
request's error that vLLM's chat handler logged under its own stamp, the paste keeping only the exception's
line (w2710).

Each rule is general and cited from the source that prints its text (vLLM's wheels and sdists; XLA's error
codes): the log that showed it is one case, a text written from the source in another form is the other, and
a text beside it that the rule must not take is a third. The source checks skip where the wheels are not
unpacked (CI); the readings run everywhere. The CUTLASS text is compiled into vllm/_C and XLA's into libtpu:
no wheel's .py file holds them (their sources are cited in lib/ddlab/vllm_crashes/).
"""

from __future__ import annotations

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import read_log, reads, vllm_signature, vllm_traceback, wheel_text_test

_HANDLED = ('logger.exception("Error in preprocessing prompt inputs")\n'
            "            return self.create_error_response(")
SOURCES = [
    # _custom_ops' hint_on_error, re-raising a custom op's NotImplementedError with its hint
    ("0.6.3.post1", "vllm/_custom_ops.py", '"Error in calling custom op %s: %s\\n"'),
    ("0.6.3.post1", "vllm/_custom_ops.py",
     '"Not implemented or built, mostly likely because the current current device "'),
    ("0.6.4.post1", "vllm/_custom_ops.py", '"Error in calling custom op %s: %s\\n"'),
    # the logger's stamp, repeated on every line of a record (its traceback's too)
    ("0.6.3.post1", "vllm/logger.py",
     '_FORMAT = "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s"'),
    ("0.6.3.post1", "vllm/logging/formatter.py", 'msg = msg.replace("\\n", "\\r\\n" + parts[0])'),
    # the chat and completion handlers: what they log at ERROR, they answer the one request with an error
    ("0.6.3.post1", "vllm/entrypoints/openai/serving_chat.py",
     'logger.exception("Error in applying chat template from request")\n'
     "            return self.create_error_response(str(e))"),
    ("0.6.4.post1", "vllm/entrypoints/openai/serving_chat.py", _HANDLED),
    ("0.7.3", "vllm/entrypoints/openai/serving_chat.py", _HANDLED),
    ("0.7.3", "vllm/entrypoints/openai/serving_completion.py", _HANDLED),
    ("0.14.0", "vllm/entrypoints/openai/serving_completion.py",
     'logger.exception("Error in completion stream generator.")\n'
     "            data = self.create_streaming_error_response(e)"),
]

test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


# --- w2705: CUTLASS scaled-mm with no kernel for the GPU's compute capability -------------------------------

_HINT = ("vllm/_custom_ops.py", 49, "wrapper", "raise NotImplementedError(msg % (fn.__name__, e)) from e")


def test_no_cutlass_kernel_for_the_capability_is_unsupported_gpu():
    """w2705: the MQLLMEngine's start (V0, 0.6.3) dying of _custom_ops' "NotImplementedError: Error in calling
    custom op cutlass_scaled_mm: No compiled cutlass_scaled_mm for a compute capability less than CUDA device
    capability: 75" (a T4), one frame line glued to its code; read unknown before. The azp form and the MoE
    form ("... for CUDA device capability: 80. Required capability: 90 or 100") read the same."""
    assert reads(read_log("w2705.log"))[:2] == (True, "unsupported_gpu")
    assert vllm_signature(read_log("w2705.log")) == "vllm_unsupported_gpu"
    azp = vllm_traceback(_HINT, exc="NotImplementedError: Error in calling custom op cutlass_scaled_mm_azp: "
                                    "No compiled cutlass_scaled_mm_azp for a compute capability less than "
                                    "CUDA device capability: 70")
    assert reads(azp)[:2] == (True, "unsupported_gpu")
    moe = vllm_traceback(("vllm/_custom_ops.py", 900, "cutlass_moe_mm", "torch.ops._C.cutlass_moe_mm("),
                         exc="NotImplementedError: No compiled cutlass_scaled_mm for CUDA device capability: "
                             "80. Required capability: 90 or 100")
    assert vllm_signature(moe) == "vllm_unsupported_gpu"


def test_another_custom_ops_not_implemented_is_not_the_gpu():
    """The same hint over another op's NotImplementedError (an op with no kernel for the CPU backend: a
    build or a device choice) says nothing of the GPU's capability."""
    other = vllm_traceback(_HINT, exc="NotImplementedError: Error in calling custom op gptq_marlin_gemm: "
                                      "Could not run '_C::gptq_marlin_gemm' with arguments from the 'CPU' "
                                      "backend.")
    assert reads(other)[1] != "unsupported_gpu"


# --- w2706: XLA's compile-time scoped VMEM out-of-memory on TPU ---------------------------------------------

_JIT = ("tpu_inference/models/jax/utils/multi_modal_utils.py", 120, "embed_multimodal",
        "return maybe_jit_embed_multimodal_func(")


def test_a_kernel_over_its_scoped_vmem_is_kernel_compile():
    """w2706: the engine core on TPU (tpu-inference's torchax path) ending in "jax.errors.JaxRuntimeError:
    RESOURCE_EXHAUSTED: E1001: CompileTimeScopedVmemOom:", its explanation cut; read unknown before. XLA's
    older wording through torch_xla's StatusOr ("XLA:TPU compile permanent error. Ran out of memory in memory
    space vmem") reads the same, above the runtime's RESOURCE_EXHAUSTED that would read it cuda_oom."""
    assert reads(read_log("w2706.log"))[:2] == (True, "kernel_compile")
    assert vllm_signature(read_log("w2706.log")) == "vllm_xla_vmem_compile"
    whole = vllm_traceback(_JIT, exc="jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: E1001: "
                                     "CompileTimeScopedVmemOom:\nScoped allocation with size 36.25M and "
                                     "limit 32.00M exceeded scoped vmem limit by 4.25M.")
    assert reads(whole)[:2] == (True, "kernel_compile")
    older = vllm_traceback(("torch_xla/core/xla_model.py", 1000, "mark_step", "_xla_step_marker("),
                           exc="RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile "
                               "permanent error. Ran out of memory in memory space vmem. Used 32.42M of "
                               "16.00M vmem. Exceeded vmem capacity by 16.42M.")
    assert vllm_signature(older) == "vllm_xla_vmem_compile"


def test_the_devices_memory_is_no_vmem_compile():
    """The runtime out of HBM (a program that cannot be loaded: vo16's text) stays cuda_oom; XLA's other
    compile-time OOM, of HBM (E1000), is no VMEM kernel."""
    hbm = vllm_traceback(_JIT, exc="RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Error loading "
                                   "program: Attempting to reserve 1.04G at the bottom of memory. That was "
                                   "not possible.")
    assert reads(hbm)[:2] == (True, "cuda_oom")
    compile_hbm = vllm_traceback(_JIT, exc="jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: E1000: "
                                           "CompileTimeHbmOom: Exceeded hbm capacity by 1.20G.")
    assert reads(compile_hbm)[1] != "kernel_compile"


# --- w2710: one request's error under the chat handler's stamp ---------------------------------------------

_CHAT = "ERROR 11-11 21:14:55 serving_chat.py:158] "


def test_an_error_the_chat_handler_logged_is_one_requests():
    """w2710: RunPod's console (time, worker id and level on lines of their own) around one vLLM line,
    "ERROR 11-11 21:14:55 serving_chat.py:158] jinja2.exceptions.TemplateSyntaxError: expected token 'end of
    print statement', got 'name'\\n" (the record's newline kept as a literal \\n): 0.6.3's chat handler logs
    the template's error for the request and answers it (serving_chat.py:158-159); read a crash before. The
    whole record (its message, then the traceback, each line under the same stamp) reads the same, and so
    does a newer release's bracketed stamp on the completion handler."""
    assert reads(read_log("w2710.log")) == (False, "request_error", "serving")
    assert vllm_signature(read_log("w2710.log")) == "vllm_request_handler_error"
    record = _CHAT + "Error in applying chat template from request\n" + vllm_traceback(
        ("vllm/entrypoints/chat_utils.py", 560, "apply_hf_chat_template",
         "prompt = tokenizer.apply_chat_template("),
        exc="jinja2.exceptions.TemplateSyntaxError: unexpected '}'", head=_CHAT)
    assert reads(record) == (False, "request_error", "serving")
    newer = ("(APIServer pid=1) ERROR 12-03 10:00:00 [serving_completion.py:512] TypeError: 'NoneType' "
             "object is not iterable\n")
    assert reads(newer, "vllm")[:2] == (False, "request_error")


def test_the_handlers_own_traceback_is_the_cause_over_its_400_line():
    """vt23 (round 16): the chat handler's traceback of a body that did not parse, every line under
    "ERROR 02-08 11:19:09 serving_chat.py:193]", then uvicorn's 400 for it. The handler's traceback names
    the fault; the access line only says a 4xx went out ("logs no traceback for it", which is not so here):
    the handler's record outranks the access line (it took the cause after round 27's merge)."""
    text = read_log("vt23.log")
    found = diagnose(text, family="vllm")
    assert (found.crashed, found.kind, found.signature) == (False, "request_error", "vllm_request_handler_error")
    assert found.cause.startswith("json.decoder.JSONDecodeError: Expecting value"), found.cause
    # no handler traceback: the access line alone keeps its own reading
    assert vllm_signature(text.splitlines()[-2] + "\n") == "vllm_request_http_4xx"


def test_the_same_error_under_another_stamp_is_still_a_crash():
    """The same exception line bare, or under the engine core's stamp, is no handler's record: a crash."""
    line = "jinja2.exceptions.TemplateSyntaxError: expected token 'end of print statement', got 'name'\n"
    assert reads("ERROR 11-11 21:14:55 [core.py:1000] " + line, "vllm")[0] is True
    assert reads(line, "vllm")[0] is True
    info = "INFO 11-11 21:14:55 serving_chat.py:158] " + line
    assert vllm_signature(info) != "vllm_request_handler_error"
