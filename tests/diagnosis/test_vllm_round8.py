"""The rules that round 8 of the vLLM corpus (vi01-vi28, measured once) showed missing.

Each rule is general and cited from the wheels (vLLM 0.6.4.post1, 0.7.3, 0.30.0, 0.33.0, 0.34.0):
the round-8 log that showed it is one case, a text written from the source in another form is the
other, and a text beside it that the rule must not take is a third. SGLang's reading of every
SGLang log is unchanged (test_vllm_diagnosis.test_every_sglang_log_is_read_as_sglang and the
SGLang corpus floors).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.vllm_log import detect_family
from fieldkit import assert_in_wheel, read_log, reads, vllm_traceback

SGLANG_WHEELS = [Path("/work/wheels/sglang-0.5.23/sglang"), Path("/work/wheels/sglang-0.4.10.post2/sglang")]


def _in_no_sglang_wheel(text: str) -> None:
    """``text`` is written by no SGLang release (both wheels searched): a vLLM mark may say it."""
    if not all(root.exists() for root in SGLANG_WHEELS):
        pytest.skip("the SGLang wheels are not unpacked here")
    for root in SGLANG_WHEELS:
        assert not any(text in path.read_text(errors="replace") for path in root.rglob("*.py")), root


# --- texts no SGLang release writes are vLLM marks ------------------------------------------

def test_the_kv_cache_check_for_one_request_at_the_max_len_is_vllms_text():
    """vi13: V1's check that the KV cache holds one request at the model's max seq len
    (kv_cache_planning.py:125 (0.34.0), kv_cache_utils.py:900 (0.30.0)), alone and wrapped by the
    writer onto three lines, had no vLLM mark: read as SGLang's, unknown."""
    assert_in_wheel("0.34.0", "vllm/v1/core/kv_cache_planning.py",
                    "To serve at least one request with the model's max seq len")
    _in_no_sglang_wheel("To serve at least one request with the model")
    text = read_log("vi13.log")
    assert detect_family(text) == "vllm"
    assert reads(text) == (True, "kv_pool_oom", "memory_pool")
    # V0's wording of the same check (worker/worker.py:500 (0.6.4.post1)), one line
    assert_in_wheel("0.6.4.post1", "vllm/worker/worker.py", "is larger than the maximum number of tokens that can be ")
    v0 = ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that "
          "can be stored in KV cache (20144). Try increasing `gpu_memory_utilization` or decreasing "
          "`max_model_len` when initializing the engine.\n")
    assert detect_family(v0) == "vllm" and reads(v0)[:2] == (True, "kv_pool_oom")
    # another ValueError about a length stays SGLang's reading (no mark)
    assert detect_family("ValueError: the prompt is longer than the max seq len (4096)\n") == "sglang"


def test_vllms_speculative_config_class_is_a_vllm_mark():
    """vi08: "'SpeculativeConfig' object has no attribute 'get'", one line: vLLM's config class
    (vllm/config/speculative.py (0.34.0); vllm/config.py (0.6.4.post1)) that no SGLang release
    has; read as SGLang's before (the kind, unknown, is the same either way)."""
    assert_in_wheel("0.34.0", "vllm/config/speculative.py", "class SpeculativeConfig")
    assert_in_wheel("0.6.4.post1", "vllm/config.py", "class SpeculativeConfig")
    _in_no_sglang_wheel("SpeculativeConfig")
    text = read_log("vi08.log")
    assert detect_family(text) == "vllm"
    found = diagnose(text)
    assert (found.crashed, found.kind, found.family) == (True, "unknown", "vllm")
    # SGLang's own speculative names stay SGLang's
    assert detect_family("AttributeError: 'SpeculativeAlgorithm' object has no attribute 'get'\n") == "sglang"


# --- a V0 decode batch for which no CUDA graph was captured: cuda_graph_replay ----------------

def test_a_batch_size_with_no_captured_graph_is_a_replay_failure():
    """vi02: V0's model runner picks the captured graph for the decode batch's size,
    ``self.graph_runners[virtual_engine][graph_batch_size]`` (worker/model_runner.py:1637
    (0.6.4.post1), :1683 (0.7.3); 0.4's ``self.graph_runners[graph_batch_size]``): a KeyError there
    is a batch size no graph was captured for (the scorer's batch, expanded by the speculative
    tokens, is larger than `--max-num-seqs`); read unknown before."""
    assert_in_wheel("0.6.4.post1", "vllm/worker/model_runner.py", "model_executable = self.graph_runners[virtual_engine][")
    assert_in_wheel("0.7.3", "vllm/worker/model_runner.py", "model_executable = self.graph_runners[virtual_engine][")
    found = diagnose(read_log("vi02.log"))
    assert (found.crashed, found.kind, found.phase) == (True, "cuda_graph_replay", "serving")
    assert "--enforce-eager" in found.suggestion and "--max-num-seqs" in found.suggestion
    # 0.6.4.post1's form (the statement split over two lines), in a V0 worker's traceback; and
    # the draft model runner's lookup (spec_decode/draft_model_runner.py:249 (0.6.4.post1))
    head = "(VllmWorkerProcess pid=7) ERROR 11-05 10:00:00 multiproc_worker_utils.py:229] "
    for path, line, code in (
            ("vllm/worker/model_runner.py", 1637, "model_executable = self.graph_runners[virtual_engine]["),
            ("vllm/spec_decode/draft_model_runner.py", 249,
             "model_executable = (self.graph_runners[model_input.virtual_engine]")):
        text = vllm_traceback(
            ("vllm/worker/worker_base.py", 343, "execute_model", "output = self.model_runner.execute_model("),
            (path, line, "execute_model", code), exc="KeyError: 24", head=head)
        assert reads(text) == (True, "cuda_graph_replay", "serving"), path
    # another KeyError in the same runner is not the graphs'
    other = vllm_traceback(
        ("vllm/worker/worker_base.py", 343, "execute_model", "output = self.model_runner.execute_model("),
        ("vllm/worker/model_runner.py", 700, "_prepare_model_input", "seq_data = seq_group_metadata.seq_data[seq_id]"),
        exc="KeyError: 24", head=head)
    assert diagnose(other).kind != "cuda_graph_replay"


# --- a V0 worker's failed method: a crash, its phase from the method -------------------------

def test_a_workers_failed_method_is_a_crash_in_that_methods_phase():
    """vi09: V0's worker wrapper logs "Error executing method start_worker_execution_loop. This
    might cause deadlock in distributed execution." and re-raises (worker/worker_base.py:478
    (0.6.4.post1), :579 (0.7.3); v1/executor/ray_utils.py:87 (0.30.0)); the traceback below it is
    cut: read as not crashed before. The method is the TP workers' step loop (worker_base.py:78,
    run from the executor's execute_model, distributed_gpu_executor.py:77): serving."""
    assert_in_wheel("0.6.4.post1", "vllm/worker/worker_base.py", "This might cause deadlock in distributed execution.")
    assert_in_wheel("0.30.0", "vllm/v1/executor/ray_utils.py", "This might cause deadlock in distributed execution.")
    assert reads(read_log("vi09.log")) == (True, "unknown", "serving")
    # 0.7.3's form (the method's repr) under vLLM's stamp, traceback cut: the method gives the phase
    head = "(RayWorkerWrapper pid=9) ERROR 03-01 10:00:00 worker_base.py:581] "
    cut = (f"{head}Error executing method 'init_device'. This might cause deadlock in distributed execution.\n"
           f"{head}Traceback (most recent call last):\n")
    assert reads(cut) == (True, "unknown", "launch")
    # with the worker's own error below it, that error's kind wins (the line is only an echo)
    whole = cut.replace("'init_device'", "'execute_model'") + vllm_traceback(
        ("vllm/worker/worker_base.py", 571, "execute_method", "return run_method(target, method, args, kwargs)"),
        ("vllm/worker/model_runner.py", 1700, "execute_model", "hidden_or_intermediate_states = model_executable("),
        exc="RuntimeError: CUDA error: an illegal memory access was encountered", head=head).split("\n", 1)[1]
    assert reads(whole) == (True, "cuda_illegal_access", "serving")
    # the KV cache's method keeps its own reading (vllm_initialize_cache_failed)
    init_cache = cut.replace("'init_device'", "'initialize_cache'")
    assert reads(init_cache)[1:] == ("kv_pool_oom", "memory_pool")


# --- a model config that names no architecture: arch_unsupported -----------------------------

def test_a_model_config_with_no_architectures_is_an_architecture_vllm_cannot_tell():
    """vi21: pydantic's "1 validation error for ModelConfig / Value error, No model architectures
    are specified": vLLM's model registry (inspect_model_cls / resolve_model_cls,
    model_executor/models/registry.py:1454, :1507 (0.34.0), :1326 (0.30.0)) finds no architecture
    in the model's config to pick a model class by; read bad_argument (vllm_config_invalid) before."""
    for release, line in (("0.34.0", 1454), ("0.30.0", 1326)):
        source = Path(f"/work/wheels/vllm/{release}/vllm/model_executor/models/registry.py")
        if not source.exists():
            pytest.skip(f"{source} not unpacked here")
        assert 'raise ValueError("No model architectures are specified")' in source.read_text().splitlines()[line - 1]
    found = diagnose(read_log("vi21.log"))
    assert (found.crashed, found.kind, found.phase) == (True, "arch_unsupported", "launch")
    assert "architectures" in found.suggestion
    # the plain ValueError in an engine core's traceback through the registry
    text = vllm_traceback(
        ("vllm/config/model.py", 700, "__post_init__", "self._architecture = self._get_architecture()"),
        ("vllm/model_executor/models/registry.py", 1454, "inspect_model_cls",
         'raise ValueError("No model architectures are specified")'),
        exc="ValueError: No model architectures are specified")
    assert reads(text)[:2] == (True, "arch_unsupported")
    # V0 only warns (registry.py:376 (0.6.4.post1)): a warning line is no crash
    warned = "WARNING 11-05 10:00:00 registry.py:376] No model architectures are specified\n"
    assert not diagnose(warned, family="vllm").crashed
    # another value error of the model config stays bad_argument
    other = read_log("vi21.log").replace("No model architectures are specified", "Invalid max_model_len")
    assert diagnose(other).kind == "bad_argument"


# --- the model's layers built for loading: load_weights ------------------------------------

def test_creating_a_layers_weights_is_loading_the_model():
    """vi16: a CUDA OOM in the linear layer's ``create_weights`` (the quant method's, called from
    the layer's __init__ while ``initialize_model`` builds the model inside ``load_model``:
    model_executor/layers/linear.py:179, :382, model_loader/base_loader.py:54 (0.34.0)): kind
    right, said launch before; labelled load_weights."""
    assert_in_wheel("0.34.0", "vllm/model_executor/layers/linear.py", "self.quant_method.create_weights(")
    assert_in_wheel("0.34.0", "vllm/model_executor/model_loader/base_loader.py", "model = initialize_model(")
    assert reads(read_log("vi16.log")) == (True, "cuda_oom", "load_weights")
    # an embedding's create_weights (vocab_parallel_embedding.py:47 (0.34.0)), another error
    text = vllm_traceback(
        ("vllm/model_executor/layers/vocab_parallel_embedding.py", 300, "__init__",
         "self.quant_method.create_weights(self,"),
        ("vllm/model_executor/layers/vocab_parallel_embedding.py", 50, "create_weights",
         "weight = Parameter(torch.empty(sum(output_partition_sizes),"),
        exc="RuntimeError: shape '[-1, 0]' is invalid for input of size 0")
    assert reads(text)[2] == "load_weights"
    # a frame named create_weights_ for something else is not it
    other = text.replace(", in create_weights", ", in create_weights_cache")
    assert reads(other)[2] != "load_weights"
