"""What held-out round 78 of the vLLM corpus (w7801-w7818, measured once on main at e1a91c0 with its logs 31f40c2)
showed: crashed 18/18, kind 14/18, phase 12/14. Its five misses were read from the source (docs/diagnosis.md,
"Held-out round 78"): all five fixed, none disputed, none left:

- w7801 (kind): from 0.7 V0's executor names the platform's device in its block count ("# %s blocks: %d, # CPU
  blocks: %d", executor/executor_base.py:111 (0.7.3), device_name "cuda", platforms/cuda.py:72), and 0 GPU blocks
  raises at once in initialize_cache (raise_if_cache_size_invalid, worker/worker.py:538 (0.7.3)): kv_pool_oom
  (vllm_crashes/signatures.py GPU_BLOCKS_ZERO).
- w7806 (phase): the capture bar "Capturing CUDA graph shapes" of 0.7 to 0.10 (worker/model_runner.py:1484 (0.7.3);
  v1/worker/gpu_model_runner.py:2309 (0.9.2)), in no SGLang wheel, is a vLLM mark, also behind a carriage return a
  paste spelt "^M" (vllm_crashes/entrypoints.py TEXT_MARKS): the paste is read as vLLM's, graph_capture.
- w7808 (kind): a wrapper's "YYYY-MM-DD hh:mm:ss: " before each line is a paste prefix (diagnosis/viewer_prefixes.py
  COLON_STAMP), so FlashInfer's "TopPSamplingFromProbs failed with error code an illegal memory access was
  encountered" under it is read: cuda_illegal_access.
- w7811 (kind): a KeyError on a layer's weight raised looking it up in vllm-ascend's quant description (the
  checkpoint's quant_model_description.json; quant_config.py:126, :137 (0.9.2rc1)): weights_unreadable
  (vllm_crashes/ascend.py ASCEND_QUANT_DESCRIPTION).
- w7814 (kind): torch inductor's InductorError wraps whatever failed building the compiled graph's kernels (torch
  2.8.0 _inductor/compile_fx.py:923): kernel_compile where no closer signature reads the inner exception
  (device_crashes/compilers.py INDUCTOR_FAILED, read for vLLM alone with its advice: vllm_crashes/adapters.py).

Each positive test below failed at 31f40c2 (before the fixes).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_at_line, assert_in_library_wheel,
                      assert_vllm_logs_read_as_labelled, disputed, folded_round, not_unpacked, read_log, reads, said,
                      vllm_traceback)

_ROUND = [f"w78{n:02d}" for n in range(1, 19)]


def test_the_round_is_folded_with_its_eighteen_logs():
    assert folded_round(VLLM_MANIFEST, 78) == _ROUND


def test_none_of_the_round_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w7801: 0.7's block count naming the device ----------------------------------------------------------------------

def test_zero_cuda_blocks_is_kv_pool_oom():
    assert said(read_log("w7801.log")) == (True, "kv_pool_oom", "vllm_gpu_blocks_zero")
    assert reads(read_log("w7801.log"))[2] == "memory_pool"


def test_the_same_count_in_another_form():
    """0.8.5.post1 on ROCm (executor_base.py:112, "rocm": platforms/rocm.py:125), V0's LLMEngine calling it (:435)."""
    text = ("INFO 05-02 10:00:01 [executor_base.py:112] # rocm blocks: 0, # CPU blocks: 2048\n"
            "INFO 05-02 10:00:01 [executor_base.py:117] Maximum concurrency for 8192 tokens per request: 0.00x\n"
            + vllm_traceback(("vllm/engine/llm_engine.py", 435, "_initialize_kv_caches",
                              "self.model_executor.initialize_cache(num_gpu_blocks, num_cpu_blocks)"),
                             exc=None, head="[rank0]: "))
    assert said(text, family="vllm")[:2] == (True, "kv_pool_oom")


@pytest.mark.parametrize("line", [
    "INFO 02-26 09:54:05 executor_base.py:111] # cuda blocks: 4096, # CPU blocks: 0",  # no swap space: CPU blocks 0
    "INFO 02-26 09:54:05 executor_base.py:111] # cuda blocks: 0512, # CPU blocks: 4681",
    "INFO 02-26 09:54:05 executor_base.py:111] # cuda blocks: 10, # CPU blocks: 4681",
], ids=["cpu-blocks-zero", "leading-zero", "ten-blocks"])
def test_near_misses_are_no_zero_blocks(line):
    assert said(line + "\n", family="vllm")[2] != "vllm_gpu_blocks_zero"


# --- w7806: the capture bar behind a pasted "^M" ----------------------------------------------------------------------

def test_the_capture_bars_are_graph_capture():
    assert reads(read_log("w7806.log")) == (False, None, "graph_capture")


_BAR = "Capturing CUDA graph shapes:  49%|####9     | 33/67 [00:10<00:10,  3.21it/s]"


@pytest.mark.parametrize("text", [
    # 0.9.2's V1 worker bar (v1/worker/gpu_model_runner.py:2309) with its carriage returns kept
    f"\r{_BAR}\r{_BAR.replace('33/67', '34/67')}\n",
    # the same under a Ray worker's colour-coded tag, its ESC spelt out
    f"ESC[36m(RayWorkerWrapper pid=7, ip=10.0.0.2)ESC[0m ^M{_BAR}\n",
], ids=["cr-kept", "ray-tag-caret-m"])
def test_the_same_bar_in_another_form(text):
    assert reads(text) == (False, None, "graph_capture")


def test_sglangs_capture_bar_stays_sglangs():
    """SGLang's own bar ("Capturing batches (bs=N avail_mem=...)", 0.5.23
    model_executor/runner/decode_cuda_graph_runner.py) is no vLLM mark."""
    from ddlab.diagnosis.vllm_log import told_family
    text = "Capturing batches (bs=8 avail_mem=20.10 GB):  50%|#####     | 2/4 [00:01<00:01,  1.50it/s]\n"
    assert told_family(text)[0] == "sglang"


# --- w7808: a wrapper's "date time: " before each line ----------------------------------------------------------------

def test_the_flashinfer_fault_under_the_wrapper_stamp_is_read():
    assert said(read_log("w7808.log")) == (True, "cuda_illegal_access", "vllm_cuda_illegal_access")


def test_the_same_stamp_in_another_form():
    """An ISO time with milliseconds before a V1 engine core's traceback ending in FlashInfer's top-k kernel's fault
    (flashinfer-python 0.5.0 csrc/sampling.cu:123: "TopKSamplingFromProbs failed with error code " and the error's
    cudaGetErrorString)."""
    text = "".join(f"2025-09-01T08:00:01.250: (EngineCore_DP0 pid=4) ERROR 09-01 08:00:01 [core.py:710] {msg}\n"
                   for msg in ("EngineCore encountered a fatal error.", "Traceback (most recent call last):",
                               '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 701, in '
                               "run_engine_core",
                               "    engine_core.run_busy_loop()",
                               "RuntimeError: TopKSamplingFromProbs failed with error code an illegal memory access "
                               "was encountered"))
    assert said(text)[:2] == (True, "cuda_illegal_access")


@pytest.mark.parametrize("raw", [
    "2025-06-27 17:14:23:(VllmWorker rank=1 pid=7) INFO 06-27 17:14:23 [a.py:1] x",  # no space after the colon
    "request at 2025-06-27 17:14:23: (VllmWorker rank=1 pid=7) INFO x",               # not at the line's start
], ids=["no-space", "mid-line"])
def test_near_misses_keep_the_time(raw):
    from ddlab.diagnosis.vllm_log import vllm_lines
    assert "2025-06-27 17:14:23:" in vllm_lines(raw + "\n")[0].msg


# --- w7811: a layer missing from vllm-ascend's quant description ------------------------------------------------------

def test_the_missing_layer_is_weights_unreadable():
    assert said(read_log("w7811.log")) == (True, "weights_unreadable", "vllm_ascend_quant_description_missing")
    assert reads(read_log("w7811.log"))[2] == "load_weights"


def test_the_same_lookup_in_another_form():
    """0.11.0rc0's unfused branch (quant_config.py:152), a down_proj the description lacks."""
    text = vllm_traceback(
        ("vllm/model_executor/layers/linear.py", 1290, "__init__",
         "self.quant_method = quant_config.get_quant_method(self, prefix=prefix)"),
        ("vllm_ascend/quantization/quant_config.py", 104, "get_quant_method",
         "if self.is_layer_skipped_ascend(prefix,"),
        ("vllm_ascend/quantization/quant_config.py", 152, "is_layer_skipped_ascend",
         "is_skipped = self.quant_description[prefix + '.weight'] == \"FLOAT\""),
        exc="KeyError: 'model.layers.3.mlp.down_proj.weight'", head="")
    assert said(text, family="vllm")[:2] == (True, "weights_unreadable")


@pytest.mark.parametrize("text", [
    # the attention's KV quant type looked up, not a layer's weight
    vllm_traceback(("vllm_ascend/quantization/quantizer.py", 253, "get_quantizer",
                    "quant_type = quant_description['fa_quant_type']"), exc="KeyError: 'fa_quant_type'", head=""),
    # a layer's weight looked up in an app's own dict
    vllm_traceback(("myapp/quant.py", 12, "skip", "return self.quant_description[prefix + '.weight']"),
                   exc="KeyError: 'model.layers.0.self_attn.q_proj.weight'", head=""),
], ids=["fa-quant-type", "app-dict"])
def test_near_misses_are_no_quant_description(text):
    assert said(text, family="vllm")[2] != "vllm_ascend_quant_description_missing"


# --- w7814: torch inductor's InductorError ----------------------------------------------------------------------------

def test_the_inductor_error_is_kernel_compile():
    assert said(read_log("w7814.log")) == (True, "kernel_compile", "vllm_inductor_compile_failed")


def test_the_same_error_in_another_form():
    """torch 2.8.0's wrap (compile_fx.py:923) of a lowering failure."""
    text = vllm_traceback(
        ("torch/_inductor/compile_fx.py", 923, "_compile_fx_inner",
         "raise InductorError(e, currentframe()).with_traceback("),
        exc="torch._inductor.exc.InductorError: LoweringException: AssertionError: \n  target: aten.mm.default",
        head="")
    assert said(text, family="vllm")[1:] == ("kernel_compile", "vllm_inductor_compile_failed")


@pytest.mark.parametrize(("inner", "kind"), [
    ("RuntimeError: PassManager::run failed", "kernel_compile"),
    ("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of "
     "which 1.00 GiB is free.", "cuda_oom"),
], ids=["triton-pass", "cuda-oom"])
def test_a_closer_reading_of_the_inner_exception_wins(inner, kind):
    text = vllm_traceback(("torch/_inductor/compile_fx.py", 923, "_compile_fx_inner", "raise InductorError(e)"),
                          exc=f"torch._inductor.exc.InductorError: {inner}", head="")
    found = said(text, family="vllm")
    assert found[1] == kind and found[2] != "vllm_inductor_compile_failed"


# --- the rules' texts, where the releases hold them -------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.7.3", "vllm/executor/executor_base.py", 111, 'logger.info("# %s blocks: %d, # CPU blocks: %d",'),
    ("0.7.3", "vllm/worker/worker.py", 538, "if not is_attention_free and num_gpu_blocks <= 0:"),
    ("0.7.3", "vllm/worker/worker.py", 539, 'raise ValueError("No available memory for the cache blocks. "'),
    ("0.7.3", "vllm/platforms/cuda.py", 72, 'device_name: str = "cuda"'),
    ("0.7.3", "vllm/platforms/rocm.py", 101, 'device_name: str = "rocm"'),
    ("0.8.5.post1", "vllm/executor/executor_base.py", 112, 'logger.info("# %s blocks: %d, # CPU blocks: %d",'),
    ("0.8.5.post1", "vllm/platforms/rocm.py", 125, 'device_name: str = "rocm"'),
    ("0.8.5.post1", "vllm/engine/llm_engine.py", 435,
     "self.model_executor.initialize_cache(num_gpu_blocks, num_cpu_blocks)"),
    ("0.7.3", "vllm/worker/model_runner.py", 1484, 'desc="Capturing CUDA graph shapes",'),
    ("0.10.2", "vllm/worker/model_runner.py", 1432, 'desc="Capturing CUDA graph shapes")'),
    ("0.9.2", "vllm/v1/worker/gpu_model_runner.py", 2309, 'desc="Capturing CUDA graph shapes")'),
], ids=lambda value: str(value).replace("/", "-")[:40] if isinstance(value, str) else None)
def test_each_cited_vllm_line_holds_its_text(release, path, line, text):
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert text in source.read_text().splitlines()[line - 1], (source, line)


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("vllm_ascend", "0.9.2rc1", "vllm_ascend/quantization/quant_config.py", 126,
     "is_shard_skipped = self.quant_description[shard_prefix +"),
    ("vllm_ascend", "0.9.2rc1", "vllm_ascend/quantization/quant_config.py", 137,
     "is_skipped = self.quant_description[prefix + '.weight'] == \"FLOAT\""),
    ("vllm_ascend", "0.9.2rc1", "vllm_ascend/quantization/quant_config.py", 75,
     'return ["quant_model_description.json"]'),
    ("vllm_ascend", "0.9.2rc1", "vllm_ascend/quantization/quantizer.py", 241,
     "quant_type = quant_description[prefix + '.weight']"),
    ("vllm_ascend", "0.11.0rc0", "vllm_ascend/quantization/quant_config.py", 141,
     "is_shard_skipped = self.quant_description[shard_prefix +"),
    ("flashinfer-python", "0.5.0", "flashinfer/data/csrc/sampling.cu", 99,
     '<< "TopPSamplingFromProbs failed with error code " << cudaGetErrorString(status);'),
    ("flashinfer-python", "0.5.0", "flashinfer/data/csrc/sampling.cu", 123,
     '<< "TopKSamplingFromProbs failed with error code " << cudaGetErrorString(status);'),
    ("torch", "2.8.0", "torch/_inductor/compile_fx.py", 923, "raise InductorError(e, currentframe()).with_traceback("),
    ("torch", "2.8.0", "torch/_inductor/exc.py", 140, "class InductorError(BackendCompilerFailed):"),
    ("torch", "2.8.0", "torch/_inductor/scheduler.py", 4747, 'raise AssertionError(f"{type(self)=}")'),
], ids=lambda value: str(value).replace("/", "-")[:40] if isinstance(value, str) else None)
def test_each_cited_library_line_holds_its_text(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)


def test_sglang_writes_no_vllm_capture_bar():
    assert_in_library_wheel("sglang", "0.5.23", "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py",
                           "Capturing batches")
