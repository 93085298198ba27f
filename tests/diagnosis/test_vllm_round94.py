"""What held-out round 94 of the vLLM corpus (w9401-w9425, measured once on main at 32e28a8, staged as 26db0ce)
showed: crashed 24/25, kind 17/25, phase 23/24. Its nine misses were read from the source of the releases the logs
show (docs/diagnosis.md, "Held-out round 94"): five fixed, four kinds disputed, none left.

- w9414 (crashed, kind): V0's background loop died (an AssertionError in the Neuron runner's step) and a request's
  ASGI traceback shows it through _raise_exception_on_finish's ``task.result()``: the loop hands its error to every
  stream and refuses each later request (engine/async_llm_engine.py:38, :393-395, :405-407 (0.4.1)), the engine's
  death, not one request's error (vllm_crashes/engine.py V0_LOOP_RAISED).
- w9418 (kind): vLLM 0.4.1 binds its compiled ops in a try that passes an ImportError over (_custom_ops.py:5-9), so
  a build without a working vllm._C dies at the first op with NameError 'vllm_cache_ops' (installs.py C_OPS_UNBOUND).
- w9413 (kind): huggingface_hub's ModelInfo handing the Hub's "safetensors" entry whole to SafeTensorsInfo, which
  refuses the key "sharded" the Hub added (0.26.2 builds it from its two keys, hf_api.py:864-869): an installed
  huggingface_hub too old for the Hub's answer (hub.py HUB_INFO_UNPARSED).
- w9411 (kind): vLLM's OpenVINO backend loading an IR exported without past key values, which optimum-intel refuses
  (modeling_decoder.py:122, :158-171 (1.18.1)): the checkpoint does not fit the loader (loading.py
  OPENVINO_IR_NO_CACHE).
- w9404 (phase): IPython's verbose traceback (Colab's) names its frames "[path](link) in f(args)", which the
  tracebacks' reader does not take; read as frames, profile_run's is the memory pool's (vllm_frames.py
  ipython_frames).
- Disputed (kind): w9401 and w9420 (labelled unknown: the Ray node's free TPU check and a Ray Serve replica that sees
  no GPU are bad_argument, rounds 43 and 90), w9405 (labelled dependency_mismatch: vLLM's own ``for name in f:``
  between 0.2.2 and 0.2.3, unknown), w9421 (labelled unsupported_gpu: "Failed to infer device type" is a build for
  no platform, dependency_mismatch).

Each positive test below failed at 26db0ce (before the fixes). Only this round's logs are read (the suite's time).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_library_wheel, assert_in_wheel, assert_vllm_logs_read_as_labelled,
                      disputed, folded_round, read_log, reads, said)

_ROUND = [f"w94{n:02d}" for n in range(1, 26)]


def test_the_round_is_folded_with_its_twenty_five_logs():
    assert folded_round(VLLM_MANIFEST, 94) == _ROUND


def test_four_kinds_of_the_round_are_disputed_as_ddlab_reads_them():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w9401", "w9405", "w9420", "w9421"]
    assert {log_id: VLLM_MANIFEST[log_id]["kind_disputed"] for log_id in disputed(VLLM_MANIFEST, _ROUND)} == {
        "w9401": ["unknown", "bad_argument"], "w9405": ["dependency_mismatch", "unknown"],
        "w9420": ["unknown", "bad_argument"], "w9421": ["unsupported_gpu", "dependency_mismatch"]}
    for log_id in disputed(VLLM_MANIFEST, _ROUND):
        assert reads(read_log(f"{log_id}.log"))[1] == VLLM_MANIFEST[log_id]["kind_disputed"][1]


def test_each_log_reads_as_labelled_with_no_miss_left():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w9414: V0's loop death handed to a request ------------------------------------------------------------------

def test_a_loop_death_in_a_requests_traceback_is_the_engines_crash():
    assert said(read_log("w9414.log")) == (True, "unknown", "vllm_v0_loop_raised")
    assert reads(read_log("w9414.log"), family="vllm") == (True, "unknown", "serving")


def test_a_requests_own_error_under_asgi_stays_the_requests():
    """The same request's traceback without the loop's frames: one request's error, the server serving on."""
    lines = read_log("w9414.log").splitlines(keepends=True)
    text = "".join(lines[:75]) + "    | ValueError: the request's own error\n    +" + "-" * 36 + "\n"
    assert said(text, family="vllm")[:2] == (False, "request_error")


def test_the_loops_own_record_keeps_its_chain_as_the_cause():
    """Round 89's w8908: "Engine background task failed" logs the loop's traceback itself, no request's frames."""
    assert said(read_log("w8908.log"), family="vllm") == (True, "unknown", None)


# --- w9418: vLLM's compiled ops never imported ----------------------------------------------------------------------

def test_an_unbound_compiled_op_is_the_install():
    assert said(read_log("w9418.log")) == (True, "dependency_mismatch", "vllm_c_ops_unbound")
    assert reads(read_log("w9418.log"))[2] == "graph_capture"


def test_the_same_name_unbound_outside_custom_ops_is_not_read_so():
    text = read_log("w9418.log").replace('vllm/_custom_ops.py", line 175', 'my_ops/kernels.py", line 175')
    assert said(text)[2] != "vllm_c_ops_unbound"


# --- w9413: huggingface_hub too old for the Hub's answer ---------------------------------------------------------

def test_a_hub_info_the_library_cannot_parse_is_its_release():
    assert said(read_log("w9413.log")) == (True, "dependency_mismatch", "vllm_hub_info_unparsed")
    assert reads(read_log("w9413.log"))[2] == "load_weights"


def test_another_librarys_dataclass_refusing_a_keyword_is_not_read_so():
    text = read_log("w9413.log").replace("huggingface_hub/hf_api.py", "mylib/api.py")
    assert said(text)[2] != "vllm_hub_info_unparsed"


# --- w9411: an OpenVINO IR without its KV cache -------------------------------------------------------------------

def test_an_ir_exported_without_the_cache_is_the_checkpoint():
    assert said(read_log("w9411.log")) == (True, "weights_unreadable", "vllm_openvino_ir_no_cache")
    assert reads(read_log("w9411.log"))[2] == "load_weights"


def test_the_reverse_use_cache_refusal_is_not_read_so():
    """A caller's use_cache=False on an IR that has the cache is the caller's argument, not the checkpoint."""
    text = read_log("w9411.log").replace(
        "`use_cache` was set to `True` but the loaded model only supports `use_cache=False`",
        "`use_cache` was set to `False` but the loaded model only supports `use_cache=True`")
    assert said(text)[2] != "vllm_openvino_ir_no_cache"


# --- w9404: IPython's frames ---------------------------------------------------------------------------------------

def test_ipythons_frames_show_the_memory_pools_profile_run():
    assert reads(read_log("w9404.log")) == (True, "unsupported_gpu", "memory_pool")


def test_ipython_frames_above_a_python_traceback_are_not_its_own():
    """A Python traceback with frames of its own below the IPython block: its frames are the phase's (launch)."""
    text = read_log("w9404.log").replace(
        "RuntimeError: CUDA error: no kernel image",
        'Traceback (most recent call last):\n  File "/content/run.py", line 3, in main\n    start()\n'
        "RuntimeError: CUDA error: no kernel image")
    assert reads(text)[2] == "launch"


# --- the lines the rules and the disputes cite ---------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.4.0.post1", "vllm/engine/async_llm_engine.py", 'logger.error("Engine background task failed", exc_info=e)'),
    ("0.4.0.post1", "vllm/engine/async_llm_engine.py", '"Background loop has errored already.")'),
    ("0.6.4.post1", "vllm/engine/async_llm_engine.py", "return_value = task.result()"),
    ("0.5.1", "vllm/model_executor/model_loader/openvino.py", "pt_model = OVModelForCausalLM.from_pretrained("),
    ("0.7.2", "vllm/worker/worker.py", "torch.cuda.set_device(self.device)"),
    ("0.7.2", "vllm/executor/uniproc_executor.py", 'self.collective_rpc("init_device")'),
    ("0.6.2", "vllm/config.py", 'raise RuntimeError("Failed to infer device type")'),
    ("0.2.4", "vllm/model_executor/weight_utils.py", "for name in f.keys():  # noqa: SIM118"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)


def test_the_hub_builds_its_safetensors_info_from_two_keys_since():
    assert_in_library_wheel("huggingface_hub", "0.26.2", "huggingface_hub/hf_api.py",
                            'parameters=safetensors["parameters"],')
