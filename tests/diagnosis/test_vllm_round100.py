"""What held-out round 100 of the vLLM corpus (w10001-w10019, measured once on main at 66b14a51, staged as 54317a7c)
showed: crashed 17/19, kind 12/19, phase 13/15. Its nine misses were read from the source of the releases and
libraries the logs show (docs/diagnosis.md, "Held-out round 100"): four fixed, two kinds disputed (and read so),
three left (known_misses.json).

- w10007 (kind): LlamaAttention's bare ``assert self.total_num_kv_heads % tp_size == 0`` (0.5.0
  model_executor/models/llama.py:109), Phi-3-medium's 10 KV heads under TP 4: bad_argument
  (vllm_crashes/parallel_sizes.py HEADS_NOT_DIVISIBLE).
- w10012 (kind): a tokenizer object passed as ``LLM(tokenizer=...)``, which ModelConfig hands to ``is_s3``
  (``model_or_path.lower()``, 0.8.3 transformers_utils/utils.py:15, config.py:461): bad_argument
  (vllm_crashes/entrypoints.py MODEL_PATH_NOT_STR).
- w10001 (kind disputed, unknown -> cuda_graph_replay): the block table copied into the captured graphs' buffer
  (0.5.0 worker/model_runner.py:510-516), as round 31 read the same text.
- w10011 (kind disputed, unsupported_gpu -> dependency_mismatch): xFormers refusing cutlassF for its build alone
  ("xFormers wasn't build with CUDA support", xformers 0.0.28.post3 ops/fmha/common.py:370; the base minimum
  capability (5, 0), :304): vllm_crashes/installs.py XFORMERS_NO_CUDA_BUILD.
- w10018, w10019 (phase): NVIDIA NIM starts its uvicorn server ("Started server process") and builds vLLM's engine in
  its application startup after it; vLLM's own server logs the engine's "Initializing a V1 LLM engine (v...)" (0.10.2
  v1/engine/core.py:76) before uvicorn starts, so a uvicorn start before that line is not this engine's ready
  (diagnosis/vllm_log.py, beside round 33's non-default args).
- left: w10002 (crashed, kind), w10014 (crashed, kind), w10015 (kind).

Each positive test below failed at 54317a7c (before the fixes). Only this round's logs are read (the suite's time).
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed,
                      folded_round, read_log, reads, said)

_ROUND = [f"w100{n:02d}" for n in range(1, 20)]
_LEFT = {"w10002": ["crashed", "kind"], "w10014": ["crashed", "kind"], "w10015": ["kind"]}


def test_the_round_is_folded_with_its_nineteen_logs():
    assert folded_round(VLLM_MANIFEST, 100) == _ROUND


def test_two_kinds_are_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w10001", "w10011"]
    assert VLLM_MANIFEST["w10001"]["kind_disputed"] == ["unknown", "cuda_graph_replay"]
    assert VLLM_MANIFEST["w10011"]["kind_disputed"] == ["unsupported_gpu", "dependency_mismatch"]


def test_each_log_reads_as_labelled_but_the_three_left():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == _LEFT
    assert all(KNOWN_MISSES["vllm-real"][log_id] == missed for log_id, missed in _LEFT.items())


# --- w10007: the attention heads not dividing over the TP ranks -------------------------------------------------------

def test_the_kv_heads_assert_is_the_tp_size():
    assert said(read_log("w10007.log")) == (True, "bad_argument", "vllm_tp_heads_not_divisible")
    assert reads(read_log("w10007.log"))[2] == "load_weights"


@pytest.mark.parametrize("line", ["assert self.total_num_heads % tp_size == 0",
                                  "assert tp_size % self.total_num_kv_heads == 0"])
def test_the_other_head_asserts_are_read_so(line):
    text = read_log("w10007.log").replace("assert self.total_num_kv_heads % tp_size == 0", line)
    assert line in text
    assert said(text)[2] == "vllm_tp_heads_not_divisible"


def test_another_bare_assert_is_not_read_so():
    text = read_log("w10007.log").replace("assert self.total_num_kv_heads % tp_size == 0",
                                          "assert self.config.rope_scaling is None")
    assert said(text)[2] != "vllm_tp_heads_not_divisible"


def test_the_assert_in_an_earlier_frame_is_not_read_so():
    text = read_log("w10007.log").replace(
        "[rank0]: AssertionError",
        "[rank0]:   File \"/x/vllm/model_executor/layers/linear.py\", line 300, in __init__\n"
        "[rank0]:     assert param_data.shape == loaded_weight.shape\n[rank0]: AssertionError")
    assert said(text)[2] != "vllm_tp_heads_not_divisible"


# --- w10012: a tokenizer object given where a name is taken -----------------------------------------------------------

def test_a_tokenizer_object_is_a_bad_argument():
    assert said(read_log("w10012.log")) == (True, "bad_argument", "vllm_model_path_not_str")
    assert reads(read_log("w10012.log"))[2] == "launch"


def test_pythons_own_wording_is_read_so():
    text = read_log("w10012.log").replace("AttributeError: PreTrainedTokenizerFast has no attribute lower",
                                          "AttributeError: 'PeftModelForCausalLM' object has no attribute 'lower'")
    assert said(text)[2] == "vllm_model_path_not_str"


def test_lower_missing_outside_is_s3_is_not_read_so():
    text = read_log("w10012.log").replace(", in is_s3", ", in _norm")
    assert said(text)[2] != "vllm_model_path_not_str"


# --- w10011: xFormers without its CUDA build -----------------------------------------------------------------------

def test_xformers_without_its_cuda_build_is_the_install():
    assert said(read_log("w10011.log")) == (True, "dependency_mismatch", "vllm_xformers_no_cuda_build")
    assert reads(read_log("w10011.log"))[2] == "memory_pool"


def test_a_capability_refusal_alone_is_not_read_so():
    text = read_log("w10011.log").replace("    xFormers wasn't build with CUDA support\n", "")
    assert "wasn't build" not in text
    assert said(text)[2] != "vllm_xformers_no_cuda_build"


# --- w10001: the graphs' block-table buffer, as round 31 ---------------------------------------------------------------

def test_the_graphs_block_table_buffer_is_read_as_the_second_look():
    assert said(read_log("w10001.log")) == (True, "cuda_graph_replay", "vllm_graph_block_tables")


# --- w10018, w10019: an embedding server's uvicorn started before the engine ----------------------------------------

def test_nims_uvicorn_before_the_engine_is_no_ready():
    assert reads(read_log("w10018.log")) == (True, "kv_pool_oom", "memory_pool")
    assert reads(read_log("w10019.log")) == (False, None, "load_weights")


_ENGINE = ("INFO 12-07 23:29:00 [core.py:74] Initializing a V1 LLM engine (v0.10.1.1) with config: model='m'\n"
           "INFO 12-07 23:29:01 [gpu_model_runner.py:1985] Loading model from scratch...\n")
_UVICORN = "INFO:     Started server process [80]\nINFO:     Waiting for application startup.\n"


def test_uvicorn_started_before_the_engine_is_not_ready():
    assert reads(_UVICORN + _ENGINE)[2] == "load_weights"


def test_uvicorn_started_after_the_engine_is_ready():
    assert reads(_ENGINE + _UVICORN)[2] == "ready"


# --- the lines the rules and disputes cite ----------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.5.0", "vllm/model_executor/models/llama.py", "assert self.total_num_kv_heads % tp_size == 0"),
    ("0.5.0", "vllm/model_executor/models/llama.py", "assert tp_size % self.total_num_kv_heads == 0"),
    ("0.5.0", "vllm/worker/model_runner.py", "input_block_tables = self.graph_block_tables[:batch_size]"),
    ("0.5.0", "vllm/worker/model_runner.py", "and max_decode_seq_len <= self.max_seq_len_to_capture)"),
    ("0.8.3", "vllm/config.py", "if is_s3(model) or is_s3(tokenizer):"),
    ("0.8.3", "vllm/transformers_utils/utils.py", "return model_or_path.lower().startswith('s3://')"),
    ("0.10.2", "vllm/v1/engine/core.py", 'logger.info("Initializing a V1 LLM engine (v%s) with config: %s",'),
    ("0.5.0", "vllm/engine/llm_engine.py", '"Initializing an LLM engine (v%s) with config: "'),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)
