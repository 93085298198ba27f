"""Held-out round 91 (issue 24): Triton's AMD backend with no conversion for an OCP fp8 type is a GPU that lacks
the type; one label disputed, one miss left.

Round 91 (h91001-h91012; issue bodies archived in yunwei37/vllm-exp) was measured once on main at a9364fe (with
the round's logs, 77efae2): crashed 11/12, kind 9/12, phase 10/10. docs/diagnosis.md, "Held-out round 91", tells
the round.

- h91006, DeepSeek-V3 with EP MoE on 8x MI300X (SGLang 0.4.5): Triton's MLIR errors "Unsupported conversion
  from 'f8E4M3FN' to 'f16'" in the EP MoE grouped GEMM (0.4.5 sglang/srt/layers/moe/ep_moe/kernels.py:606, its
  weights float8_e4m3fn whatever the GPU, layer.py:191), then "RuntimeError: PassManager::run failed". CDNA3 has
  fp8 only in the FNUZ formats: read as unsupported_gpu, as Triton's "type fp8e4nv not supported in this
  architecture" is (device_crashes/ocp_fp8.py); the phase is the traceback's after the diagnostics block
  (diagnosis/phase.py). Ddlab's.
- h91003, a Qwen2 EAGLE draft's "TypeError: Qwen2Model.forward() got an unexpected keyword argument
  'pp_proxy_tensors'": SGLang's own qwen2.py passing what qwen2_eagle.py's Qwen2Model did not take yet (0.4.7.post1
  models/qwen2.py:443; 0.4.6.post4 qwen2_eagle.py:84-90; 0.4.7.post1 qwen2_eagle.py:91): disputed, unknown.
- h91008, a 0.2.13 start-up ending after the warmup's prefill with multiprocessing's leaked shared_memory warning:
  nothing says the server died rather than was stopped; left (known_misses.json). Its eight "[gpu=N]" ranks'
  lines (SGLang 0.2.x's model runner) now name SGLang over vLLM's eight custom all-reduce warnings
  (diagnosis/vllm_log.py): the log was routed to vLLM's reading, which read it the same.

Each positive test fails on 77efae2.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 91)


def test_round91_is_folded_into_work_with_one_dispute_and_one_miss_left():
    assert _IDS == [f"h910{n:02d}" for n in range(1, 13)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h91003"]
    assert REAL_MANIFEST["h91003"]["kind_disputed"] == ["draft_incompatible", "unknown"]
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == ["h91008"]


@pytest.mark.parametrize(("log_id", "reading"), [
    ("h91006", (True, "unsupported_gpu", "serving")),
    ("h91003", (True, "unknown", "serving")),
    ("h91008", (False, None, "ready")),
], ids=["h91006", "h91003-disputed", "h91008-left"])
def test_the_rounds_misses_read_as_settled(log_id, reading):
    found = real(log_id)
    assert (found.crashed, found.kind if found.crashed else None, found.phase) == reading


# --- h91006: an OCP fp8 conversion Triton's AMD backend has no lowering for --------------------------------------

_SRT = "/sgl-workspace/sglang/python/sglang/srt"
_TRITON = "/opt/conda/envs/py_3.10/lib/python3.10/site-packages/triton"
_HEAD = "[2025-05-02 11:20:41 TP0] Scheduler hit an exception: Traceback (most recent call last):"


def _frame(path: str, line: int, func: str, code: str) -> list[str]:
    return [f'  File "{path}", line {line}, in {func}', f"    {code}"]


def _diagnostic(src: str, dst: str, kernel: str = "layers/moe/fused_moe_triton/fused_moe.py:512:24") -> list[str]:
    where = f"{_SRT}/{kernel}"
    return [f"{where}: error: Unsupported conversion from '{src}' to '{dst}'",
            "        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)",
            "                       ^",
            f"{where}: error: failed to legalize operation 'tt.fp_to_fp' that was explicitly marked illegal",
            "        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)",
            "                       ^"]


def _traceback(*frames: list[str]) -> list[str]:
    return [_HEAD, *(line for frame in frames for line in frame),
            *_frame(f"{_TRITON}/backends/amd/compiler.py", 328, "make_llir", "pm.run(mod)"),
            "RuntimeError: PassManager::run failed"]


_SERVING = _frame(f"{_SRT}/managers/tp_worker.py", 180, "forward_batch_generation",
                  "logits_output = self.model_runner.forward(forward_batch)")
_CAPTURE = _frame(f"{_SRT}/model_executor/cuda_graph_runner.py", 302, "capture",
                  ") = self.capture_one_batch_size(bs, forward)")


# another kernel (fused_moe's), the other OCP type (e5m2) to fp32, and the diagnostics repeated three times (once
# per pass) so that the traceback starts far below the first one: its phase is still the traceback's
@pytest.mark.parametrize(("diagnostics", "frames", "phase"), [
    (_diagnostic("f8E4M3FN", "f32"), _SERVING, "serving"),
    (_diagnostic("f8E5M2", "f16"), _SERVING, "serving"),
    (_diagnostic("f8E4M3FN", "bf16") * 3, _CAPTURE, "graph_capture"),
], ids=["e4m3fn-serving", "e5m2-serving", "repeated-capture"])
def test_an_ocp_fp8_conversion_tritons_amd_backend_cannot_lower_is_unsupported_gpu(diagnostics, frames, phase):
    text = "\n".join([*diagnostics, *_traceback(frames)]) + "\n"
    assert reads(text, family="sglang") == (True, "unsupported_gpu", phase)


# near misses: a conversion from an FNUZ type (the ones CDNA3 has) failing the same way, and the pass failure with
# no diagnostic at all, stay a kernel build that failed
@pytest.mark.parametrize("diagnostics", [
    _diagnostic("f8E4M3FNUZ", "f16"),
    _diagnostic("f8E5M2FNUZ", "f32"),
    [],
], ids=["e4m3fnuz", "e5m2fnuz", "no-diagnostic"])
def test_other_triton_pass_failures_stay_kernel_compile(diagnostics):
    text = "\n".join([*diagnostics, *_traceback(_SERVING)]) + "\n"
    assert reads(text, family="sglang")[:2] == (True, "kernel_compile")


# --- h91008: SGLang 0.2.x's rank prefix names the server ------------------------------------------------------------

_ALLREDUCE = ("WARNING 08-23 11:04:07 custom_all_reduce.py:118] Custom allreduce is disabled because it's not "
              "supported on more than two PCIe-only GPUs. To silence this warning, specify "
              "disable_custom_all_reduce=True explicitly.")


# eight ranks' "[gpu=N]" lines (0.2.12 model_executor/model_runner.py:97, :143) among vLLM's eight warnings
def test_sglang_02s_rank_prefix_makes_its_start_up_sglangs():
    from ddlab.diagnosis.vllm_log import detect_family
    lines = [f"[gpu={n}] Init nccl begin." for n in range(8)] + [_ALLREDUCE] * 8
    lines += [f"[gpu={n}] Load weight begin. avail mem=21.65 GB" for n in range(8)]
    assert detect_family("\n".join(lines) + "\n") == "sglang"
    assert real("h91008").family == "sglang"


# --- the texts cited from wheels ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.4.5", "sglang/srt/layers/moe/ep_moe/kernels.py", 606,
     "accumulator += tl.dot(a_tile, b_tile.T) * a_scale * b_scale[None, :]"),
    ("sglang", "0.4.5", "sglang/srt/layers/moe/ep_moe/layer.py", 191, "self.fp8_dtype = torch.float8_e4m3fn"),
    ("sglang", "0.4.7.post1", "sglang/srt/models/qwen2.py", 443, "pp_proxy_tensors=pp_proxy_tensors,"),
    ("sglang", "0.4.7.post1", "sglang/srt/models/qwen2_eagle.py", 91,
     "pp_proxy_tensors: Optional[PPProxyTensors] = None,"),
    ("sglang", "0.4.7.post1", "sglang/srt/models/qwen2_eagle.py", 114,
     "class Qwen2ForCausalLMEagle(Qwen2ForCausalLM):"),
    ("sglang", "0.4.7.post1", "sglang/srt/models/qwen2_eagle.py", 125, "self.model = Qwen2Model("),
    ("sglang", "0.4.6.post4", "sglang/srt/models/qwen2_eagle.py", 89, "input_embeds: torch.Tensor = None,"),
    ("sglang", "0.2.12", "sglang/srt/model_executor/model_runner.py", 97,
     'logger.info(f"[gpu={self.gpu_id}] Init nccl begin.")'),
    ("sglang", "0.4.6.post4", "sglang/srt/models/qwen2.py", 383,
     "hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)"),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
