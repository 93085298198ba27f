"""vLLM held-out round 114 (4 logs, w11401-w11404), folded into work after its miss was read.

Measured once on main at 46d61089 (staged as 92cfc2b9): crashed 4/4, kind 3/4, phase 4/4. One log missed, read
against the source of vLLM 0.6.6 and 0.9.0 and of transformers 4.51.3 and 4.52.4:

- w11402 (kind, fixed): vLLM 0.6.6's V0 API server (MQLLMEngine) on a RunPod pod starting Mistral-7B-Instruct-v0.2
  (MistralForCausalLM, built by vLLM's llama.py) under a transformers far newer than 0.6.6 (its "`torch_dtype` is
  deprecated!" warning): LlamaAttention takes ``getattr(config, "head_dim", hidden_size // num_heads)``
  (model_executor/models/llama.py:132-133), whose default is used only where the attribute is missing, and
  transformers 4.52 leaves MistralConfig's head_dim None where config.json has none
  (models/mistral/configuration_mistral.py:146: "head_dim or hidden_size // num_attention_heads" in 4.51.3,
  "head_dim" in 4.52.4), so ``self.q_size = self.num_heads * self.head_dim`` (llama.py:134) raises "unsupported
  operand type(s) for *: 'int' and 'NoneType'"; vLLM 0.9.0 takes None as missing (llama.py:134-136, config.py:1112).
  A transformers newer than this vLLM: dependency_mismatch as labelled (vllm_crashes/installs.py ``HEAD_DIM_NONE``,
  read only where the raising frame is a vLLM model's __init__ on a line that uses head_dim; another None in model
  code, a head_dim line outside the models, or the attention selector's logging error alone are not this).
- w11401 (read as labelled): vLLM 0.14.0's CUDA graph capture failing "the provided PTX was compiled with an
  unsupported toolchain" (dependency_mismatch, graph_capture, the PTX rule).
- w11403 (read as labelled): an EngineDeadError with no engine-core traceback on the first job (unknown, serving).
- w11404 (read as labelled): ROCm's WorkerProc initialization failing with no worker traceback (unknown, launch).

The positive tests below failed at 46d61089 (before the fix). Only this round's logs are read.
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_library_wheel, assert_in_wheel, assert_vllm_logs_read_as_labelled,
                      disputed, folded_round, read_log, reads, said, vllm_signature, vllm_traceback)

_ROUND = [f"w114{n:02d}" for n in range(1, 5)]
_LOADER = ("vllm/model_executor/model_loader/loader.py", 116, "_initialize_model",
           "return model_class(vllm_config=vllm_config, prefix=prefix)")
_LAYER = ("vllm/model_executor/models/llama.py", 233, "__init__", "self.self_attn = LlamaAttention(")
_Q_SIZE = ("vllm/model_executor/models/llama.py", 134, "__init__", "self.q_size = self.num_heads * self.head_dim")
_INT_NONE = "TypeError: unsupported operand type(s) for *: 'int' and 'NoneType'"
_ENGINE = "ERROR 01-21 08:27:34 engine.py:366] "


def test_the_round_is_folded_with_its_four_logs():
    assert folded_round(VLLM_MANIFEST, 114) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


def test_the_other_three_keep_their_readings():
    assert said(read_log("w11401.log")) == (True, "dependency_mismatch", "vllm_ptx_toolchain")
    assert reads(read_log("w11401.log")) == (True, "dependency_mismatch", "graph_capture")
    assert reads(read_log("w11403.log")) == (True, "unknown", "serving")
    assert reads(read_log("w11404.log")) == (True, "unknown", "launch")


# --- w11402: a head_dim a newer transformers leaves None, multiplied while vLLM builds the model ------------------

def test_head_dim_none_in_model_construction_is_a_dependency_mismatch():
    assert said(read_log("w11402.log")) == (True, "dependency_mismatch", "vllm_head_dim_none")
    assert reads(read_log("w11402.log")) == (True, "dependency_mismatch", "load_weights")


def test_the_product_in_llama_attention_reads_the_same():
    text = vllm_traceback(_LOADER, _LAYER, _Q_SIZE, exc=_INT_NONE, head=_ENGINE)
    assert vllm_signature(text) == "vllm_head_dim_none"
    assert said(text)[:2] == (True, "dependency_mismatch")


def test_the_scaling_power_reads_the_same():
    scaling = ("vllm/model_executor/models/mixtral.py", 138, "__init__", "self.scaling = self.head_dim**-0.5")
    text = vllm_traceback(_LOADER, scaling, head=_ENGINE,
                          exc="TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and 'float'")
    assert vllm_signature(text) == "vllm_head_dim_none"


def test_another_none_in_model_code_is_not_this():
    heads = ("vllm/model_executor/models/llama.py", 119, "__init__", "assert self.total_num_heads % tp_size == 0")
    text = vllm_traceback(_LOADER, _LAYER, heads, exc="TypeError: unsupported operand type(s) for %: 'NoneType' and "
                          "'int'", head=_ENGINE)
    assert vllm_signature(text) != "vllm_head_dim_none"


def test_a_head_dim_line_outside_the_models_or_another_error_is_not_this():
    forward = ("vllm/attention/backends/rocm_flash_attn.py", 405, "repeat_kv",
               "head_dim).reshape(tokens, n_kv_heads * n_rep,")
    text = vllm_traceback(forward, exc=_INT_NONE, head=_ENGINE)
    assert vllm_signature(text) != "vllm_head_dim_none"
    other = vllm_traceback(_LOADER, _LAYER, _Q_SIZE, exc="TypeError: 'NoneType' object is not subscriptable",
                           head=_ENGINE)
    assert vllm_signature(other) != "vllm_head_dim_none"


def test_the_selectors_logging_error_alone_is_not_this():
    logged = ("INFO 01-21 08:27:20 api_server.py:712] vLLM API server version 0.6.6\n"
              "--- Logging error ---\n"
              "TypeError: %d format: a real number is required, not NoneType\n"
              "Message: 'Cannot use FlashAttention-2 backend for head size %d.'\n"
              "Arguments: (None,)\n"
              "INFO 01-21 08:27:32 selector.py:129] Using XFormers backend.\n"
              "INFO 01-21 08:27:33 model_runner.py:1094] Starting to load model /m...\n")
    assert vllm_signature(logged) != "vllm_head_dim_none"


# --- the lines the rule cites ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.6.6", "vllm/model_executor/models/llama.py",
     '        self.head_dim = getattr(config, "head_dim",\n'
     "                                self.hidden_size // self.total_num_heads)\n"
     "        self.q_size = self.num_heads * self.head_dim\n"),
    ("0.6.6", "vllm/model_executor/models/llama.py", "        assert self.total_num_heads % tp_size == 0\n"),
    ("0.6.6", "vllm/attention/backends/rocm_flash_attn.py", "head_dim).reshape(tokens, n_kv_heads * n_rep,"),
    ("0.6.6", "vllm/model_executor/models/registry.py", '"MistralForCausalLM": ("llama", "LlamaForCausalLM"),'),
    ("0.9.0", "vllm/model_executor/models/llama.py",
     '        head_dim = getattr(config, "head_dim", None)\n'
     "        if head_dim is None:\n"
     "            head_dim = self.hidden_size // self.total_num_heads\n"),
    ("0.9.0", "vllm/config.py", "# NOTE: Some configs may set head_dim=None in the config"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)


@pytest.mark.parametrize(("release", "text"), [
    ("4.51.3", "        self.head_dim = head_dim or hidden_size // num_attention_heads\n"),
    ("4.52.4", "        self.sliding_window = sliding_window\n        self.head_dim = head_dim\n"),
])
def test_the_cited_lines_are_transformers_own(release, text):
    assert_in_library_wheel("transformers", release, "transformers/models/mistral/configuration_mistral.py", text)
