"""What held-out round 44 of the vLLM corpus (w4401-w4411, measured once at 8455f64 with its logs f7c555c)
showed: crashed 11/11, kind 9/11, phase 7/8. Its three misses were read from the source (docs/diagnosis.md,
"Held-out round 44"):

- w4410: HCCL's communicator failing while a Qwen3-MoE model builds its FusedMoE layer (vllm-ascend's
  AscendFusedMoE), the load_model frames cut: vLLM builds a model only in initialize_model, which the loaders'
  load_model calls (vllm 0.13.0 model_executor/model_loader/utils.py:48, base_loader.py:49; 0.34.0
  base_loader.py:54), each layer a class of model_executor/layers/ or a plugin's op in its place
  (vllm_ascend/utils.py:662-668 (0.12.0rc1)): a model file's __init__ frame whose next frame is a layer's
  __init__ is load_weights (vllm_diagnosis._MODEL_BUILT).
- w4404: libstdc++'s verbose terminate handler, "terminate called after throwing an instance of
  'std::logic_error'" then "  what():  ..." and abort() (gcc-mirror/gcc 1676372 libsupc++/vterminate.cc:67,
  :85, :95), the engine's traceback cut: a native abort no Python exception explains, native_crash (a line of
  kinds/native.py's signature, ranked below every kind, so a what() a signature knows stays that kind).
- w4403: CANN's "Parse dynamic kernel config fail." for a ZerosLike op; ddlab's cited reading
  (dependency_mismatch: CANN's own message names the environment or the kernel package,
  src/nnopbase/common/inc/kernel_mgr.h:50-52) kept, the label unknown disputed (``kind_disputed``).

Each rule is tested on the corpus log, on a text written from the source in another form, and on a near
miss that must not read the same way; every crashed log of the round is pinned to its signature.
"""

from __future__ import annotations

import pytest
from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_at_line, not_unpacked, read_log, reads, vllm_signature,
                      vllm_traceback, wheel_text_test)

_MANIFEST = VLLM_MANIFEST
_ROUND = [f"w44{n:02d}" for n in range(1, 12)]

# the signature that reads each crashed log (None: an unknown death with no text of a kind)
_SIGNATURES = {
    "w4401": "vllm_weight_name_unknown",
    "w4402": None,
    "w4403": "vllm_ascend_kernel_config_missing",  # CANN's kernel config: the label unknown disputed
    "w4404": "vllm_native_crash",                  # libstdc++'s terminate handler, the engine's traceback cut
    "w4405": None,
    "w4406": None,
    "w4407": None,
    "w4408": "vllm_kv_no_memory",
    "w4409": "vllm_import_error",
    "w4410": "vllm_hccl_call_failed",
    "w4411": None,
}


def test_the_round_is_folded_with_its_eleven_logs():
    round44 = sorted(log_id for log_id, log in _MANIFEST.items() if log.get("heldout_round") == 44)
    assert round44 == _ROUND
    assert all(_MANIFEST[log_id]["split"] == "work" for log_id in round44)


def test_each_log_reads_as_labelled():
    """Crashed for all eleven, the kind where it is not disputed (ddlab's where it is), the phase where the
    log shows it."""
    for log_id in _ROUND:
        log = _MANIFEST[log_id]
        got = reads(read_log(f"{log_id}.log"))
        assert got[0] == log["crashed"], log_id
        assert got[1] == (log["kind_disputed"][1] if "kind_disputed" in log else log["kind"]), log_id
        if log["phase_in_log"] and not log.get("phase_disputed"):
            assert got[2] == log["phase"], log_id


def test_each_crashed_log_is_read_by_its_signature():
    for log_id, signature in _SIGNATURES.items():
        assert vllm_signature(read_log(f"{log_id}.log")) == signature, log_id


# --- w4410: a model's constructor building a layer is the weights' step ------------------------------------

_WORKER = "(Worker_TP0 pid=812) ERROR 03-02 10:00:00 [multiproc_executor.py:751] "


def test_a_model_building_its_layers_is_load_weights():
    """w4410 (the worker's traceback from qwen3_moe.py's __init__ into vllm-ascend's AscendFusedMoE), and a
    CUDA worker's cut the same way: Llama's attention building its QKVParallelLinear (layers/linear.py)."""
    assert reads(read_log("w4410.log")) == (True, "nccl", "load_weights")
    cuda = vllm_traceback(
        ("vllm/model_executor/models/llama.py", 150, "__init__", "self.qkv_proj = QKVParallelLinear("),
        ("vllm/model_executor/layers/linear.py", 900, "__init__", "super().__init__("),
        ("vllm/model_executor/layers/linear.py", 420, "__init__", "self.quant_method.create_weights("),
        ("vllm/model_executor/layers/quantization/fp8.py", 300, "create_weights", "weight = ModelWeightParameter("),
        exc="RuntimeError: a layer's weight could not be made", head=_WORKER)
    assert reads(cuda)[2] == "load_weights"
    uncut = vllm_traceback(
        ("vllm/model_executor/models/llama.py", 150, "__init__", "self.qkv_proj = QKVParallelLinear("),
        ("vllm/model_executor/layers/linear.py", 900, "__init__", "super().__init__("),
        exc="RuntimeError: a layer's weight could not be made", head=_WORKER)
    assert reads(uncut)[2] == "load_weights"


def test_a_model_files_parser_built_while_serving_is_not_the_weights():
    """A model file's own non-layer class (a multimodal data parser, built from a request) calling its base's
    __init__ in vllm/multimodal/ is no layer being built: the busy loop's frames keep it serving."""
    parser = vllm_traceback(
        ("vllm/v1/engine/core.py", 900, "run_busy_loop", "self._process_engine_step()"),
        ("vllm/v1/engine/core.py", 950, "_process_engine_step", "outputs, model_executed = self.step_fn()"),
        ("vllm/model_executor/models/qwen2_vl.py", 700, "__init__", "super().__init__(*args, **kwargs)"),
        ("vllm/multimodal/parse.py", 400, "__init__", "self._validate(expected_hidden_size)"),
        exc="ValueError: an image item of the wrong shape", head="(EngineCore_DP0 pid=12) ERROR 03-02 10:00:00 "
                                                                "[core.py:1000] ")
    assert reads(parser)[2] == "serving"


# --- w4404: libstdc++'s terminate handler with an exception no signature knows -----------------------------

def test_an_uncaught_cpp_exception_is_a_native_crash():
    """w4404 (a std::logic_error from a null string, the engine's traceback cut), and another process's
    abort on a std::runtime_error, vterminate.cc's two lines as it writes them."""
    assert reads(read_log("w4404.log"))[:2] == (True, "native_crash")
    other = ("INFO 03-02 10:00:00 [model_runner.py:1000] Starting to load model /models/m...\n"
             "terminate called after throwing an instance of 'std::runtime_error'\n"
             "  what():  cannot open shared memory segment\n")
    assert vllm_signature(other) == "vllm_native_crash"
    assert reads(other)[:2] == (True, "native_crash")


def test_a_terminate_whose_what_a_signature_knows_stays_that_kind():
    """NCCL's watchdog aborting through the same handler keeps its own kind (native_crash ranks below every
    kind): the what() names the error."""
    watchdog = ("terminate called after throwing an instance of 'c10::DistBackendError'\n"
                "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with "
                "exception: CUDA error: an illegal memory access was encountered\n")
    assert reads(watchdog)[1] not in (None, "unknown", "native_crash")


# --- w4403: CANN's kernel config, the label unknown disputed --------------------------------------------

def test_the_kernel_config_reading_is_kept_and_the_label_disputed():
    log = _MANIFEST["w4403"]
    assert log["kind_disputed"] == ["unknown", "dependency_mismatch"] and "kernel_mgr.h:50-52" in log["second_look"]
    assert reads(read_log("w4403.log"))[:2] == (True, "dependency_mismatch")


test_each_rules_text_is_vllms_own = wheel_text_test([
    ("0.13.0", "vllm/model_executor/model_loader/utils.py", "return model_class(vllm_config=vllm_config, prefix=prefix)"),
    ("0.13.0", "vllm/model_executor/model_loader/base_loader.py", "model = initialize_model("),
    ("0.34.0", "vllm/model_executor/model_loader/base_loader.py", "model = initialize_model("),
    ("0.13.0", "vllm/model_executor/models/qwen3_moe.py", "self.experts = FusedMoE("),
])


def test_the_cited_lines_hold_the_texts():
    assert_at_line("vllm_ascend", "0.12.0rc1", "vllm_ascend/utils.py", 662, '"FusedMoE": AscendFusedMoE,')
    for release, path, line, text in (
            ("0.13.0", "vllm/model_executor/model_loader/utils.py", 48, "return model_class(vllm_config=vllm_config"),
            ("0.13.0", "vllm/model_executor/model_loader/base_loader.py", 49, "model = initialize_model("),
            ("0.34.0", "vllm/model_executor/model_loader/base_loader.py", 54, "model = initialize_model("),
            ("0.13.0", "vllm/model_executor/models/qwen3_moe.py", 163, "self.experts = FusedMoE(")):
        source = VLLM_WHEELS / release / path
        if not source.exists():
            pytest.skip(not_unpacked(source))
        assert text in source.read_text().splitlines()[line - 1], (release, path, line)
