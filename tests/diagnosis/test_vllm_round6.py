"""The rules that round 6 of the vLLM corpus (vg01-vg30, measured once) showed missing.

Each rule is general and cited from vLLM's wheels (0.6.4.post1, 0.7.3, 0.30.0, 0.33.0, 0.34.0): the
round-6 log that showed it is one case, a text written from the source in another form is the other,
and a text beside it that the rule must not take is a third. SGLang's reading of every SGLang log is
unchanged (test_vllm_diagnosis.test_every_sglang_log_is_read_as_sglang and the SGLang corpus floors).
"""

from __future__ import annotations

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.vllm_log import detect_family
from fieldkit import assert_in_wheel, read_log, reads, vllm_traceback


# --- one line of vLLM's own, pasted bare: a mark of the family -----------------------------

def test_the_loaders_unfilled_parameters_are_vllms_text():
    """vg21: the default loader's "Following weights were not initialized from checkpoint: {...}"
    alone (model_loader/default_loader.py:611 (0.34.0)): read as SGLang's before, so unknown."""
    assert_in_wheel("0.34.0", "vllm/model_executor/model_loader/default_loader.py",
                    '"Following weights were not initialized from "\n                    f"checkpoint:')
    text = read_log("vg21.log")
    assert detect_family(text) == "vllm"
    assert reads(text) == (True, "weights_unreadable", "load_weights")
    # SGLang's own diffusion loader warns "Some weights were not initialized from checkpoint": not vLLM's
    sglang = "[2026-01-02 10:00:00] Some weights were not initialized from checkpoint: {'lm_head.weight'}\n"
    assert detect_family(sglang) == "sglang"


def test_the_model_runners_refusal_of_a_method_it_has_no_drafter_for():
    """vg14: "Unknown speculative decoding method: mlp_speculator", raised by the V1 model runner
    when the config took a method it builds no drafter for (v1/worker/gpu_model_runner.py:698
    (0.30.0), :663 (0.33.0)): the speculative config asked for what the release does not run."""
    for release in ("0.30.0", "0.33.0"):
        assert_in_wheel(release, "vllm/v1/worker/gpu_model_runner.py", '"Unknown speculative decoding method: "')
    text = read_log("vg14.log")
    assert detect_family(text) == "vllm"
    assert reads(text) == (True, "bad_argument", "launch")
    stamped = vllm_traceback(("vllm/v1/worker/gpu_worker.py", 240, "init_device",
                              "self.model_runner = GPUModelRunner(self.vllm_config, self.device)"),
                             ("vllm/v1/worker/gpu_model_runner.py", 698, "__init__", "raise ValueError("),
                             exc="ValueError: Unknown speculative decoding method: medusa")
    found = diagnose(stamped)
    assert (found.crashed, found.kind, found.phase) == (True, "bad_argument", "launch")
    assert found.signature == "vllm_spec_method_unrouted"
    # SGLang's "Unknown speculative algorithm name" stays SGLang's
    assert detect_family("ValueError: Unknown speculative algorithm name: FOO\n") == "sglang"


def test_v1s_refusal_of_any_speculative_decoding():
    """vg15: "Speculative decoding is not yet supported on VLLM V1" (the NotImplementedError of
    platforms/rocm.py:184 (0.7.3), quoted by the user): the V1 engine of that release runs no
    speculation; a crash at launch, bad_argument."""
    assert_in_wheel("0.7.3", "vllm/platforms/rocm.py", '"Speculative decoding is not yet supported on VLLM V1."')
    text = read_log("vg15.log")
    assert detect_family(text) == "vllm"
    assert reads(text) == (True, "bad_argument", "launch")
    raised = vllm_traceback(("vllm/platforms/rocm.py", 184, "check_and_update_config", "raise NotImplementedError("),
                            exc="NotImplementedError: Speculative decoding is not yet supported on VLLM V1.")
    found = diagnose(raised)
    assert (found.crashed, found.kind, found.signature) == (True, "bad_argument", "vllm_spec_v1_unsupported")
    assert "VLLM_USE_V1=0" in found.suggestion
    # the neighbouring V1 refusal of multi-step scheduling (rocm.py:175 (0.7.3)) is no speculation
    multi = raised.replace("Speculative decoding is not yet supported on VLLM V1.",
                           "Multi-step scheduling is not supported (and not needed) on VLLM V1.")
    assert diagnose(multi).signature != "vllm_spec_v1_unsupported"


def test_the_parallel_check_of_attention_heads():
    """vg29: pydantic's "Value error, Total number of attention heads (64) must be divisible by
    tensor parallel size (3)." above the API server's args (config/model.py:1581 (0.34.0), :1561
    (0.33.0), :1428 (0.30.0); config.py:531 (0.6.4.post1)): bad_argument at launch, a TP size that
    divides the heads proposed."""
    for release, path in (("0.34.0", "vllm/config/model.py"), ("0.30.0", "vllm/config/model.py"),
                          ("0.6.4.post1", "vllm/config.py")):
        assert_in_wheel(release, path, 'f"Total number of attention heads ({total_num_attention_heads})"')
    text = read_log("vg29.log")
    assert reads(text) == (True, "bad_argument", "launch")
    raised = vllm_traceback(("vllm/engine/arg_utils.py", 1200, "create_engine_config", "config = VllmConfig("),
                            exc="ValueError: Total number of attention heads (40) must be divisible by tensor "
                                "parallel size (6).")
    found = diagnose(raised)
    assert (found.crashed, found.kind, found.signature) == (True, "bad_argument", "vllm_tp_heads")
    assert "`--tensor-parallel-size` 5" in found.suggestion and "8" in found.suggestion
    # the args alone (TP 3, no refusal) are no crash
    args = "\n".join(text.splitlines()[1:]) + "\n"
    assert reads(args)[0] is False


# --- what counts as the server moving -------------------------------------------------------

_STALL = ("(APIServer pid=7) INFO 04-18 01:08:52 [shm_broadcast.py:681] No available shared memory broadcast "
          "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
          "time-consuming work (e.g. compilation, weight/kv cache quantization).\n")


def test_a_get_that_reads_the_servers_state_is_no_progress():
    """vg07: a shared-memory stall, then only polling GETs of a job answered 200: the engine moved
    nothing (a GET reads stored state: /v1/models, /v1/responses/{id}: openai/models/api_router.py:20,
    openai/responses/api_router.py:80 (0.34.0)); hang while serving. A POST answered after the stall
    is the engine generating again."""
    assert reads(read_log("vg07.log")) == (True, "hang", "serving")
    served = '(APIServer pid=7) INFO:     127.0.0.1:5 - "{} /v1/{} HTTP/1.1" 200 OK\n'
    assert reads(_STALL + served.format("GET", "models") * 3) == (True, "hang", "serving")
    assert reads(_STALL + served.format("POST", "chat/completions"))[0] is False


def test_v1s_speculative_metrics_line_is_vllms_and_serving():
    """vg17: a V1 "SpecDecoding metrics: ..." line alone, its logger prefix not pasted (0.8's form;
    v1/spec_decode/metrics.py:121 (0.30.0, 0.34.0)): vLLM serving, no crash; read as SGLang's before."""
    assert_in_wheel("0.34.0", "vllm/v1/spec_decode/metrics.py", '"SpecDecoding metrics: "')
    text = read_log("vg17.log")
    assert detect_family(text) == "vllm"
    assert reads(text) == (False, None, "serving")
    now = ("SpecDecoding metrics: Mean acceptance length: 2.84, Accepted throughput: 10.00 tokens/s, Drafted "
           "throughput: 15.00 tokens/s, Accepted: 100 tokens, Drafted: 150 tokens\n")
    assert detect_family(now) == "vllm" and reads(now) == (False, None, "serving")
    # SGLang's decode line with its accept length stays SGLang's
    sglang = "[2026-01-02 10:00:00] Decode batch. #running-req: 1, accept len: 2.10, gen throughput (token/s): 50.0\n"
    assert detect_family(sglang) == "sglang"
