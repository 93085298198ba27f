"""The rules that round 4 of the vLLM corpus (ve01-ve30, measured once) showed missing.

Each rule is general and cited from vLLM's wheels (0.6.4.post1, 0.30.0, 0.33.0, 0.34.0) or, for
vllm-ascend, from its text as the log shows it: the round-4 log that showed it is one case, a text
written from the source in another form (another release's words, a whole traceback, another
paste's shape) is the other; a text beside it that the rule must not take is a third. SGLang's
reading of every SGLang log is unchanged (test_vllm_diagnosis.test_every_sglang_log_is_read_as_sglang
and the SGLang corpus floors).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.vllm_log import detect_family, vllm_lines
from fieldkit import STAMP, assert_in_wheel, read_log, said, vllm_traceback


_ENGINE = "(EngineCore_DP0 pid=7) "  # V1's engine core tags each line it logs


def _tb(*frames: tuple[str, int, str, str], exc: str | None, tag: str = _ENGINE) -> str:
    """A V1 traceback as the engine core's logger writes it (the tag and stamp on every line)."""
    return vllm_traceback(*frames, exc=exc, head=tag + STAMP)


# --- the paste's shape -------------------------------------------------------------------

def test_a_record_flattened_onto_one_line_is_split_at_its_process_tag():
    """ve18, ve30: line breaks lost, the tag (decorate_logs) kept before each line of the record."""
    found = diagnose(read_log("ve18.log"))
    assert (found.crashed, found.kind, found.phase) == (True, "bad_argument", "launch")
    found = diagnose(read_log("ve30.log"))
    assert (found.crashed, found.kind, found.phase) == (True, "unknown", "load_weights")
    # two different tags side by side (a wrapper's and vLLM's) are no flattened record
    two = ("(Worker pid=357) (Worker_TP0 pid=357) ERROR 03-05 05:40:33 [multiproc_executor.py:880] "
           "ValueError: x")
    assert [ln.msg for ln in vllm_lines(two)] == ["ValueError: x"]
    flat = " ".join(_tb(("vllm/config/speculative.py", 380, "__post_init__", "raise NotImplementedError("),
                        exc="NotImplementedError: Speculative decoding with draft model is not supported yet.",
                        tag="(APIServer pid=9) ").splitlines())
    assert len(vllm_lines(flat)) == 4
    assert said(flat)[:2] == (True, "bad_argument")


def test_a_launchers_time_and_level_before_the_process_tag_is_peeled():
    """ve24: "2026-07-28 06:23:24 [ERROR]   (APIServer pid=N) ..." on every line."""
    found = diagnose(read_log("ve24.log"))
    assert (found.crashed, found.kind, found.phase) == (True, "bad_argument", "launch")
    line = "2026-07-28 06:23:24 [ERROR]   (APIServer pid=551960) ValueError: x"
    assert [ln.msg for ln in vllm_lines(line)] == ["ValueError: x"]
    # without a process tag after it the prefix is no launcher's of vLLM's: kept
    assert vllm_lines("2026-07-28 06:23:24 [ERROR]   something else")[0].msg.startswith("2026")


def test_widened_spaces_in_the_metrics_line_still_read_as_serving():
    """ve25: a log viewer widened the spaces of v1/metrics/loggers.py's line, newest first."""
    found = diagnose(read_log("ve25.log"))
    assert (found.crashed, found.phase) == (False, "serving")
    text = read_log("ve25.log")
    assert found.decode["count"] == text.count("Avg generation throughput")
    assert found.decode == diagnose(text.replace("   ", " ")).decode  # as if the spaces were single
    # a metrics line that moved no tokens is no progress, widened or not: the reading is the same
    idle = ("INFO 04-06 16:08:02 [loggers.py:80] Avg   prompt throughput: 0.0 tokens/s, Avg generation "
            "throughput: 0.0 tokens/s")
    assert diagnose(idle).phase == diagnose(idle.replace("   ", " ")).phase


# --- weights_unreadable ------------------------------------------------------------------------

def test_no_module_or_parameter_named_is_weights_unreadable_and_vllms():
    """vllm/model_executor/models/utils.py:454 (0.34.0), :216 (0.6.4.post1): AutoWeightsLoader."""
    for name in ("ve20.log", "ve26.log"):
        assert said(read_log(name)) == (True, "weights_unreadable", "vllm_no_such_param")
    one = "ValueError: There is no module or parameter named 'embed_tokens' in LlamaForCausalLM"
    assert detect_family(one) == "vllm"
    found = diagnose(one)
    assert found.phase == "load_weights" and "'embed_tokens'" in found.suggestion
    # 0.34.0's longer message
    longer = _tb(("vllm/model_executor/models/utils.py", 454, "_load_module", "raise ValueError(msg)"),
                 exc="ValueError: There is no module or parameter named 'mtp' in Qwen3ForCausalLM. The available "
                     "parameters belonging to model (Qwen3Model) are: {'model.norm.weight'}")
    assert said(longer) == (True, "weights_unreadable", "vllm_no_such_param")
    assert said(one.replace("no module or parameter", "no config"))[1] != "weights_unreadable"


def test_weights_not_initialized_is_weights_unreadable_even_bulleted():
    """model_loader/default_loader.py:611 (0.34.0): the strict loader's missing tensors."""
    found = diagnose(read_log("ve21.log"))
    assert (found.kind, found.signature, found.phase) == ("weights_unreadable", "vllm_weights_not_initialized",
                                                          "load_weights")
    whole = _tb(("vllm/model_executor/model_loader/default_loader.py", 611, "load_weights", "raise ValueError("),
                exc="ValueError: Following weights were not initialized from checkpoint: {'mtp.fc.weight'}")
    assert said(whole) == (True, "weights_unreadable", "vllm_weights_not_initialized")


def test_v0_eagle_bias_without_config_is_weights_unreadable():
    """model_executor/models/eagle.py:153 (0.6.4.post1): fc.bias in the checkpoint, no eagle_fc_bias."""
    found = diagnose(read_log("ve15.log"))
    assert (found.kind, found.signature, found.phase) == ("weights_unreadable", "vllm_eagle_fc_bias", "load_weights")
    assert "eagle_fc_bias" in found.suggestion


def test_a_bare_tensor_keyerror_followed_by_another_workers_traceback_is_weights_unreadable():
    """ve12: the KeyError's frames are cut above it; the frames below are another worker's."""
    assert said(read_log("ve12.log")) == (True, "weights_unreadable", "vllm_weight_name_unknown_alone")
    framed = ("Traceback (most recent call last):\n  File \"x.py\", line 3, in f\n    d[k]\n"
              "KeyError: 'model.layers.43.mtp_block.main_norm.weight'\n")
    assert said(framed, "vllm")[2] != "vllm_weight_name_unknown_alone"  # its own frames: not bare


def test_a_lora_adapter_that_does_not_fit_is_weights_unreadable_while_serving():
    """lora/models.py:408 activate_adapter -> layers.py set_lora (0.6.4.post1): a request's adapter."""
    found = diagnose(read_log("ve29.log"))
    assert (found.kind, found.signature, found.phase) == ("weights_unreadable", "vllm_lora_shape", "serving")
    elsewhere = read_log("ve29.log").replace("in set_lora", "in set_mapping")
    assert said(elsewhere)[1] != "weights_unreadable"


# --- bad_argument --------------------------------------------------------------------------------

def test_an_exception_raised_by_a_config_check_is_a_bad_argument():
    """vllm/config/*.py __post_init__ / _verify_args (speculative.py:1646 (0.34.0)): the raising frame
    is the config's; a traceback cut inside it (ve24) is too."""
    assert said(read_log("ve18.log")) == (True, "bad_argument", "vllm_config_check")
    assert said(read_log("ve24.log")) == (True, "bad_argument", "vllm_config_check")
    raised = _tb(("vllm/engine/arg_utils.py", 2172, "create_speculative_config",
                  "return SpeculativeConfig(**self.speculative_config)"),
                 ("vllm/config/speculative.py", 1648, "_verify_args", "raise ValueError("),
                 exc="ValueError: something the check refused")
    assert said(raised) == (True, "bad_argument", "vllm_config_check")
    # raised further down (a library called by the config), the config frame is not the raiser
    deeper = raised.replace(
        "(EngineCore_DP0 pid=7) ERROR 12-03 10:00:00 [core.py:1000] ValueError: something",
        '(EngineCore_DP0 pid=7) ERROR 12-03 10:00:00 [core.py:1000]   File "/usr/lib/python3.12/site-packages/'
        'transformers/configuration_utils.py", line 9, in get_config_dict\n(EngineCore_DP0 pid=7) ERROR 12-03 '
        "10:00:00 [core.py:1000]     raise ValueError(x)\n(EngineCore_DP0 pid=7) ERROR 12-03 10:00:00 "
        "[core.py:1000] ValueError: something")
    assert said(deeper)[2] != "vllm_config_check"


def test_pydantics_value_error_line_of_a_config_dataclass_is_a_bad_argument():
    """ve14: one line, "Value error, ... [type=value_error, input_value=ArgsKwargs(...)": a validator
    of vLLM's pydantic config dataclasses (vllm/config/utils.py:77 (0.34.0))."""
    text = read_log("ve14.log")
    assert detect_family(text) == "vllm"
    found = diagnose(text)
    assert (found.crashed, found.kind, found.signature, found.phase) == (
        True, "bad_argument", "vllm_config_value_error", "launch")
    # pydantic's line for a plain model's dict input (an API request body) is no config's
    body = "  Value error, bad field [type=value_error, input_value={'a': 1}, input_type=dict]"
    assert said(body, "vllm")[2] != "vllm_config_value_error"


def test_a_feature_that_needs_the_v2_model_runner_is_a_bad_argument():
    """model_executor/models/qwen3_dflash.py:128 (0.30.0), :134 (0.33.0)."""
    assert said(read_log("ve13.log")) == (True, "bad_argument", "vllm_needs_v2_runner")
    other = "NotImplementedError: ECCPUConnector requires the V2 model runner. Set VLLM_USE_V2_MODEL_RUNNER=1."
    assert said(other) == (True, "bad_argument", "vllm_needs_v2_runner")


def test_v0_eagle_with_tensor_parallelism_is_refused_as_a_bad_argument():
    """spec_decode/spec_decode_worker.py:166 (0.6.4.post1): SpecDecodeWorker.create_worker."""
    assert said(read_log("ve16.log")) == (True, "bad_argument", "vllm_speculative_config")


# --- cuda_graph_capture ----------------------------------------------------------------------------

def test_a_stream_capture_error_is_a_capture_failure_without_its_frames():
    """ve11: CUDA's "operation not permitted when stream is capturing", the capture frames cut off."""
    found = diagnose(read_log("ve11.log"))
    assert (found.kind, found.signature, found.phase) == (
        "cuda_graph_capture", "vllm_capture_unsupported_op", "graph_capture")
    whole = _tb(("torch/cuda/graphs.py", 88, "capture_end", "super().capture_end()"),
                exc="RuntimeError: CUDA error: operation failed due to a previous error during capture")
    assert said(whole)[1] == "cuda_graph_capture"
    oom = _tb(("torch/x.py", 1, "f", "g()"), exc="torch.OutOfMemoryError: CUDA out of memory while the stream "
                                               "is capturing")
    assert said(oom)[1] != "cuda_graph_capture"


def test_a_traceback_cut_inside_the_capture_is_a_capture_failure():
    """ve10: v1/worker/gpu/cudagraph_utils.py's capture, cut before the exception."""
    found = diagnose(read_log("ve10.log"))
    assert (found.kind, found.signature, found.phase) == ("cuda_graph_capture", "vllm_capture_cut", "graph_capture")
    cut = _tb(("vllm/v1/worker/gpu_model_runner.py", 6830, "capture_model", "self._capture_cudagraphs("),
              ("vllm/v1/worker/gpu_model_runner.py", 6900, "_capture_cudagraphs", "self._dummy_run("), exc=None)
    assert said(cut)[2] == "vllm_capture_cut"
    assert said(cut.replace("capture_model", "load_model").replace("_capture_cudagraphs", "_load"))[1] \
        != "cuda_graph_capture"


# --- spec_feature_conflict -------------------------------------------------------------------------

def test_gdn_attention_mixing_plain_and_speculative_decodes_is_a_spec_feature_conflict():
    """v1/attention/backends/gdn_attn.py:420 (0.30.0), :622 (0.34.0): asserted in build()."""
    found = diagnose(read_log("ve06.log"))
    assert (found.kind, found.signature, found.phase) == ("spec_feature_conflict", "vllm_gdn_spec_mixed", "serving")
    whole = _tb(("vllm/v1/attention/backends/gdn_attn.py", 622, "build",
                 "assert not (num_decodes > 0 and num_spec_decodes > 0), ("),
                exc="AssertionError: num_decodes: 3, num_spec_decodes: 2")
    assert said(whole) == (True, "spec_feature_conflict", "vllm_gdn_spec_mixed")
    other = whole.replace("num_decodes > 0 and num_spec_decodes > 0", "num_prefills >= 0")
    assert said(other)[1] != "spec_feature_conflict"


def test_a_grammar_failing_on_draft_tokens_is_a_spec_feature_conflict():
    """v1/core/sched/scheduler.py update_draft_token_ids_in_output (:3016 (0.34.0)) -> the grammar's
    validate_tokens (v1/structured_output/__init__.py:380 (0.34.0))."""
    found = diagnose(read_log("ve08.log"))
    assert (found.kind, found.signature, found.phase) == ("spec_feature_conflict", "vllm_spec_grammar", "serving")
    whole = _tb(("vllm/v1/core/sched/scheduler.py", 3016, "update_draft_token_ids_in_output",
                 "spec_token_ids = self.structured_output_manager.validate_tokens("),
                ("vllm/v1/structured_output/__init__.py", 380, "validate_tokens",
                 "len_validated = len(grammar.validate_tokens(spec_tokens[grammar_start:]))"),
                exc="ValueError: matcher error")
    assert said(whole) == (True, "spec_feature_conflict", "vllm_spec_grammar")
    # a grammar failing on a sampled token (no draft) is not speculative decoding's
    plain = whole.replace("update_draft_token_ids_in_output", "update_from_output")
    assert said(plain)[2] != "vllm_spec_grammar"


# --- draft_incompatible ---------------------------------------------------------------------------

def test_a_drafter_whose_hidden_size_is_not_the_targets_is_draft_incompatible():
    """ve07 (vllm-ascend's eagle_proposer, garbled paste): v1/spec_decode/llm_base_proposer.py:855
    (0.30.0) copies the target's hidden states into the drafter's buffer in set_inputs_first_pass."""
    text = read_log("ve07.log")
    assert detect_family(text) == "vllm"  # site-packages/vllm_ascend/
    assert said(text) == (True, "draft_incompatible", "vllm_draft_hidden_size")
    whole = _tb(("vllm/v1/spec_decode/llm_base_proposer.py", 855, "set_inputs_first_pass",
                 "self.hidden_states[:num_tokens] = target_hidden_states"),
                exc="RuntimeError: The expanded size of the tensor (2048) must match the existing size (5120) at "
                    "non-singleton dimension 1.  Target sizes: [8, 2048].  Tensor sizes: [8, 5120]")
    assert said(whole) == (True, "draft_incompatible", "vllm_draft_hidden_size")
    elsewhere = whole.replace("set_inputs_first_pass", "forward").replace(
        "self.hidden_states[:num_tokens] = target_hidden_states", "x[:n] = y")
    assert said(elsewhere)[1] != "draft_incompatible"


# --- the engine's echoes ----------------------------------------------------------------------------

def test_the_engine_core_process_dying_is_a_crash():
    """ve09: "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client." (an older
    core_client's; 0.34.0's v1/utils.py:593 "Engine core process X died unexpectedly.")."""
    assert said(read_log("ve09.log")) == (True, "unknown", "vllm_engine_dead")
    assert said("RuntimeError: Engine core process EngineCore_DP0 died unexpectedly.", "vllm")[:2] == (True, "unknown")
    # an echo never wins over the error it echoes
    text = read_log("ve12.log")
    assert "WorkerProc failed to start." in text and said(text)[1] == "weights_unreadable"


@pytest.mark.parametrize("release,path,text", [
    ("0.34.0", "vllm/model_executor/models/utils.py", "There is no module or parameter named"),
    ("0.6.4.post1", "vllm/model_executor/models/utils.py", "There is no module or parameter named"),
    ("0.34.0", "vllm/model_executor/model_loader/default_loader.py", "Following weights were not initialized from"),
    ("0.6.4.post1", "vllm/model_executor/models/eagle.py", "Found bias in the loaded weights"),
    ("0.6.4.post1", "vllm/spec_decode/spec_decode_worker.py", "EAGLE does not support TP > 1 yet"),
    ("0.30.0", "vllm/model_executor/models/qwen3_dflash.py",
     "DFlash drafters with mixed sliding/full attention require"),
    ("0.34.0", "vllm/v1/attention/backends/gdn_attn.py", "assert not (num_decodes > 0 and num_spec_decodes > 0)"),
    ("0.34.0", "vllm/v1/core/sched/scheduler.py", "def update_draft_token_ids_in_output"),
    ("0.30.0", "vllm/v1/spec_decode/llm_base_proposer.py", "self.hidden_states[:num_tokens] = target_hidden_states"),
    ("0.34.0", "vllm/v1/utils.py", "died unexpectedly."),
    ("0.34.0", "vllm/v1/executor/multiproc_executor.py", 'logger.exception("WorkerProc failed to start.")'),
])
def test_the_texts_are_vllms(release, path, text):
    assert_in_wheel(release, path, text)
