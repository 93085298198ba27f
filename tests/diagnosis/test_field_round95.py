"""Held-out round 95 (issue 24): torch's expand error in a draft graph's replay is cuda_graph_replay; a kernel
library's module without a function SGLang calls is dependency_mismatch.

Round 95 (h95001-h95013; two files of a user's log repository, eleven SGLang issue threads) was measured once on
main at 9c260ea (with the round's logs; staged again on main at b55f7dc as 0a8b6dde): crashed 13/13, kind 8/13,
phase 12/13. docs/diagnosis.md, "Held-out round 95", tells the round.

- h95007, DeepSeek-R1 with NextN/EAGLE on flashinfer MLA (0.4.4.post1): the draft graph's replay calls the backend's
  init_forward_metadata_replay_cuda_graph, whose slice assignment of a cumsum (0.4.4.post1
  sglang/srt/layers/attention/flashinfer_mla_backend.py:293) meets torch's "The expanded size of the tensor (15) must
  match the existing size (14)": a batch that does not fit the captured buffers, cuda_graph_replay
  (crashes/kinds/graphs.py replay_size; read unknown before).
- h95009, DeepSeek on SGLang 0.4.2.post3: "module 'vllm._custom_ops' has no attribute '**silu_and_mul**'" (the
  reporter's bold markup) in the fused MoE during capture. SGLang 0.4.2.post2 calls vLLM's op module by name
  (fused_moe.py:14, :992) and pins vllm==0.6.4.post1, whose _custom_ops.py:71 defines silu_and_mul (0.7.0's does
  not): another vLLM release, dependency_mismatch (crashes/kinds/module_attrs.py library_function_missing; read
  cuda_graph_capture before).
- h95003's kind is disputed (draft_incompatible -> weights_unreadable: the draft's config is not in the log); its
  phase, h95008's and h95013's kinds are left (known_misses.json).

Each positive test fails on 0a8b6dde.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, VLLM_WHEELS, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 95)


def test_round95_is_folded_into_work_with_one_dispute_and_three_left():
    assert _IDS == [f"h950{n:02d}" for n in range(1, 14)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h95003"]
    assert REAL_MANIFEST["h95003"]["kind_disputed"] == ["draft_incompatible", "weights_unreadable"]
    assert {i: KNOWN_MISSES["real"][i] for i in _IDS if i in KNOWN_MISSES["real"]} == {
        "h95003": ["phase"], "h95008": ["kind"], "h95013": ["kind"]}


@pytest.mark.parametrize(("log_id", "reading"), [
    ("h95007", (True, "cuda_graph_replay", "serving", "replay_size")),
    ("h95009", (True, "dependency_mismatch", "graph_capture", "library_function_missing")),
])
def test_the_rounds_fixed_misses_read_as_labelled(log_id, reading):
    found = real(log_id)
    assert (found.crashed, found.kind, found.phase, found.signature) == reading


# --- h95007: torch's expand error inside a graph's replay --------------------------------------------------------

_SGL = "/usr/local/lib/python3.10/site-packages/sglang"
_STAMP = "[2025-03-18 03:38:23 TP1] "
_EXPAND = ("RuntimeError: The expanded size of the tensor (15) must match the existing size (14) at non-singleton "
           "dimension 0.  Target sizes: [15].  Tensor sizes: [14]")


def _replay(frames: list[str], exc: str) -> str:
    head = [_STAMP + "Scheduler hit an exception: Traceback (most recent call last):",
            f'  File "{_SGL}/srt/managers/scheduler.py", line 1819, in run_scheduler_process',
            "    scheduler.event_loop_normal()",
            f'  File "{_SGL}/srt/managers/scheduler.py", line 502, in event_loop_normal',
            "    result = self.run_batch(batch)"]
    return "\n".join(head + frames + [exc]) + "\n"


_DRAFT_REPLAY = [
    f'  File "{_SGL}/srt/speculative/eagle_worker.py", line 313, in draft',
    "    score_list, token_list, parents_list = self.cuda_graph_runner.replay(",
    f'  File "{_SGL}/srt/speculative/eagle_draft_cuda_graph_runner.py", line 196, in replay',
    "    self.model_runner.draft_attn_backend.init_forward_metadata_replay_cuda_graph(",
    f'  File "{_SGL}/srt/layers/attention/flashinfer_mla_backend.py", line 293, '
    "in init_forward_metadata_replay_cuda_graph",
    "    self.cuda_graph_kv_indptr_cpu[1 : bs + 1] = torch.cumsum(",
]
_TARGET_REPLAY = [
    f'  File "{_SGL}/srt/model_executor/cuda_graph_runner.py", line 520, in replay',
    "    self.model_runner.attn_backend.init_forward_metadata_replay_cuda_graph(",
    f'  File "{_SGL}/srt/layers/attention/flashinfer_backend.py", line 280, '
    "in init_forward_metadata_replay_cuda_graph",
    "    self.kv_indptr[1 : bs + 1] = torch.cumsum(seq_lens, dim=0)",
]


@pytest.mark.parametrize("frames", [_DRAFT_REPLAY, _TARGET_REPLAY], ids=["draft-graph", "target-graph"])
def test_torchs_expand_error_in_a_graph_replay_is_cuda_graph_replay(frames):
    assert reads(_replay(frames, _EXPAND), family="sglang") == (True, "cuda_graph_replay", "serving")


# near miss: the same text in an eager forward (no graph runner's frame) is not a replay
def test_torchs_expand_error_outside_a_graph_is_not_cuda_graph_replay():
    eager = [f'  File "{_SGL}/srt/layers/attention/flashinfer_backend.py", line 180, in init_forward_metadata',
             "    self.kv_indptr[1 : bs + 1] = torch.cumsum(seq_lens, dim=0)"]
    assert reads(_replay(eager, _EXPAND), family="sglang")[1] != "cuda_graph_replay"


# --- h95009: a kernel library's module without the function SGLang calls ----------------------------------------

_CAPTURE = [
    "[2025-02-08 05:57:37 TP6] Scheduler hit an exception: Traceback (most recent call last):",
    f'  File "{_SGL}/srt/model_executor/cuda_graph_runner.py", line 232, in __init__',
    "    self.capture()",
    f'  File "{_SGL}/srt/model_executor/cuda_graph_runner.py", line 298, in capture',
    "    ) = self.capture_one_batch_size(bs, forward)",
    f'  File "{_SGL}/srt/layers/moe/fused_moe_triton/fused_moe.py", line 992, in fused_experts_impl',
    "    ops.silu_and_mul(intermediate_cache2, intermediate_cache1.view(-1, N))",
]


@pytest.mark.parametrize("exc", [
    "AttributeError: module 'vllm._custom_ops' has no attribute 'silu_and_mul'",
    "AttributeError: module 'vllm._custom_ops' has no attribute '**silu_and_mul**'",
    "AttributeError: module 'sgl_kernel' has no attribute 'moe_fused_gate'",
], ids=["vllm", "vllm-markup", "sgl-kernel"])
def test_a_kernel_librarys_module_without_the_function_is_dependency_mismatch(exc):
    assert reads("\n".join(_CAPTURE + [exc]) + "\n", family="sglang") == (
        True, "dependency_mismatch", "graph_capture")


# near miss: another module's missing attribute (SGLang's own, or an object's) is no library mismatch
@pytest.mark.parametrize("exc", [
    "AttributeError: module 'sglang.srt.layers.moe' has no attribute 'silu_and_mul'",
    "AttributeError: 'NoneType' object has no attribute 'silu_and_mul'",
    "AttributeError: module 'vllm_utils' has no attribute 'silu_and_mul'",
], ids=["sglang-module", "object", "other-prefix"])
def test_another_missing_attribute_is_no_library_mismatch(exc):
    assert reads("\n".join(_CAPTURE + [exc]) + "\n", family="sglang")[1] != "dependency_mismatch"


# --- the texts cited from wheels ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.4.4.post1", "sglang/srt/layers/attention/flashinfer_mla_backend.py", 293,
     "self.cuda_graph_kv_indptr_cpu[1 : bs + 1] = torch.cumsum("),
    ("sglang", "0.4.4.post1", "sglang/srt/speculative/eagle_draft_cuda_graph_runner.py", 196,
     "self.model_runner.draft_attn_backend.init_forward_metadata_replay_cuda_graph("),
    ("sglang", "0.4.2.post2", "sglang/srt/layers/moe/fused_moe_triton/fused_moe.py", 14,
     "from vllm import _custom_ops as ops"),
    ("sglang", "0.4.2.post2", "sglang/srt/layers/moe/fused_moe_triton/fused_moe.py", 992, "ops.silu_and_mul("),
    ("sglang", "0.4.2.post2", "sglang-0.4.2.post2.dist-info/METADATA", 244, "vllm==0.6.4.post1"),
    ("sglang", "0.4.7", "sglang/srt/managers/scheduler.py", 295, "self.draft_worker = EAGLEWorker("),
    ("sglang", "0.4.7", "sglang/srt/models/qwen2.py", 513, "param = params_dict[name]"),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)


def test_the_pinned_vllm_has_the_function_and_0_7_0_has_not():
    pinned, later = VLLM_WHEELS / "0.6.4.post1/vllm/_custom_ops.py", VLLM_WHEELS / "0.7.0/vllm/_custom_ops.py"
    if not (pinned.exists() and later.exists()):
        pytest.skip(f"{pinned} or {later} not unpacked here")
    assert "def silu_and_mul(" in pinned.read_text().splitlines()[70]
    assert "def silu_and_mul(" not in later.read_text()
