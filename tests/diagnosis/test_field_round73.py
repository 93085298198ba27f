"""Held-out round 73 (issue 24): the prefix cache evicting is serving, a JIT kernel's tensor check broken after "for".

Round 73 (h73001-h73013; excerpts of issue and pull-request threads) was measured once on main at f50a79d (with the
round's logs, 3df42ce): crashed 13/13, kind 12/13, phase 10/12. docs/diagnosis.md, "Held-out round 73", tells the
round. Two misses were ddlab's:

- h73004, a fragment of a HiMamba radix cache's device eviction, the code line
  "tree_cache.evict(EvictParams(num_tokens=num_tokens))" over hi_mamba_radix_cache.py evict / _evict_device_leaf /
  _evict_regular and "AssertionError: non-leaf, node.id=1178": the prefix caches evict only to make room while
  requests are batched (0.5.10 mem_cache/common.py:252 in evict_from_tree_cache, under the slot allocation of an
  extend or decode batch, :207, :268, :405; managers/schedule_batch.py:1615, :1939, :2032). Their eviction frames
  and that code line are serving frames (crashes/frames.py ``_CACHE_EVICT``); startup frames still win.
- h73007, "tvm.error.InternalError: Tensor match failed for" with the tensor on the next line and "- Root cause:
  Device value [rocm:0] not in the allowed options: [cpu, rocm_host]": SGLang's JIT kernels' TensorMatcher
  (0.5.16 jit_kernel/include/sgl_kernel/tensor.h:534-536; the device check :333-340), the paste broken after
  "for". ``kernel_check_failed`` (device_crashes/kernels.py) takes the break: kernel_config_unsupported.

h73010's phase is disputed: the paste ends at TP0's "Load weight end" (0.4.2.post2 model_executor/model_runner.py:
345-350), after which the constructor sizes the memory pool (:207): memory_pool, as the corpus reads that line.
h73013 (ms-swift's SglangEngine starting) read as labelled but as vLLM's log: its five processes each print vLLM's
import notice (vllm 0.7.3 platforms/__init__.py:207; SGLang 0.4.4.post1 imports vLLM, srt/layers/quantization/
__init__.py:9) against one SGLang line; the notice now counts once (diagnosis/vllm_log.py family_marks).
Each positive test here fails on 3df42ce.
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.vllm_log import detect_family
from fieldkit import KNOWN_MISSES, REAL, REAL_MANIFEST, VLLM_WHEELS, assert_at_line, assert_reads_as_labelled, \
    disputed, folded_round, not_unpacked, real, reading, reads, said

_IDS = folded_round(REAL_MANIFEST, 73)


def test_round73_is_folded_into_work_with_h73010s_phase_disputed():
    assert _IDS == [f"h730{n:02d}" for n in range(1, 14)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h73010"]
    assert REAL_MANIFEST["h73010"]["phase_disputed"] == ["load_weights", "memory_pool"]
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h73004", None),
    ("h73007", "kernel_check_failed"),
], ids=lambda v: str(v))
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


def test_h73010_reads_as_its_second_look():
    assert reading(real("h73010")) == (False, None, "memory_pool")


# --- h73004: the prefix cache evicting to make room for a batch ------------------------------------------------

_HI_MAMBA = '  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/hi_mamba_radix_cache.py", line {}, in {}\n'
_NON_LEAF = ('    assert len(node.children) == 0, f"non-leaf, {node.id=}"\n'
             "AssertionError: non-leaf, node.id=7\n")
# 0.5.13's HiMamba eviction (evict :689 -> :707 _evict_device_leaf -> :686 _evict_regular -> the assert :546)
_EVICT_0513 = (_HI_MAMBA.format(707, "evict") + "    evicted_full, evicted_mamba = self._evict_device_leaf(x)\n"
               + _HI_MAMBA.format(686, "_evict_device_leaf") + "    return self._evict_regular(x)\n"
               + _HI_MAMBA.format(546, "_evict_regular") + _NON_LEAF)


# the same eviction in other forms, written from the source: 0.5.13's frames under the cut code line, its frames
# alone (paths trimmed as some pastes do), the mamba radix cache's evict_mamba (0.5.13 mamba_radix_cache.py:751
# evict :761 -> :767 evict_mamba, its assert :776), 0.5.10's evict_from_tree_cache calling a plugin's tree cache
@pytest.mark.parametrize("text", [
    "    tree_cache.evict(EvictParams(num_tokens=num_tokens))\n" + _EVICT_0513,
    _EVICT_0513.replace("/sgl-workspace/sglang/python/", ""),
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/mem_cache/mamba_radix_cache.py", line 761, in evict\n'
    "    mamba_num_evicted = self.evict_mamba(params.mamba_num)\n"
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/mem_cache/mamba_radix_cache.py", line 776, in '
    'evict_mamba\n    assert x.mamba_value is not None, f"node has no mamba value, {x.id=}"\n'
    "AssertionError: node has no mamba value, x.id=5\n",
    '  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/common.py", line 252, in evict_from_tree_cache\n'
    "    tree_cache.evict(EvictParams(num_tokens=num_tokens))\n"
    '  File "/opt/kvd/kvd_radix_cache.py", line 88, in evict_leaves\n    assert node.lock_ref == 0\nAssertionError\n',
], ids=["0.5.13-cut", "0.5.13-trimmed", "mamba-evict", "code-line"])
def test_the_prefix_cache_evicting_is_serving(text):
    assert reads(text) == (True, "unknown", "serving")


# near misses: the same frames under the scheduler's constructor (startup frames win), a cache's evictable_size
# (read by logging and checks, not an eviction), an evict frame of another package, prose quoting the call
@pytest.mark.parametrize("text", [
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 320, in __init__\n'
    "    self.init_memory_pool_and_cache()\n" + _EVICT_0513,
    '  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/radix_cache.py", line 603, in evictable_size\n'
    "    return self.evictable_size_\nAttributeError: 'RadixCache' object has no attribute 'evictable_size_'\n",
    '  File "/usr/local/lib/python3.12/dist-packages/cachetools/__init__.py", line 120, in evict\n'
    "    return self.popitem()\nKeyError: 'cache is empty'\n",
    "the server dies when tree_cache.evict(EvictParams(num_tokens=num_tokens)) runs, AssertionError: non-leaf\n",
], ids=["startup-frames", "evictable-size", "other-package", "prose"])
def test_other_frames_are_not_the_prefix_cache_evicting(text):
    assert reads(text)[2] != "serving"


# --- h73007: SGLang's JIT kernels' tensor check, the paste broken after "for" ----------------------------------

_STAGED = "/sgl-workspace/sglang/python/sglang/jit_kernel/csrc/kvcacheio/staged_write_back.cuh"


# the same check in other forms, written from 0.5.16's source (tensor.h:534-536, the device check :333-340, the
# staged write-back's host indices staged_write_back.cuh:246-247, launched from jit_kernel/hicache.py:297): CUDA's
# host device refused with the "at FILE:LINE" kept, a dtype refused under the scheduler's traceback
@pytest.mark.parametrize("text", [
    "tvm.error.InternalError: Tensor match failed for\n"
    f"  Tensor<64>[strides=<1>, dtype=int64, device=cuda:0] at {_STAGED}:247\n"
    "- Root cause: Device value [cuda:0] not in the allowed options: [cpu, cuda_host]\n",
    "[2026-08-04 10:02:11 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/jit_kernel/hicache.py", line 297, in '
    "transfer_hicache_all_layer_staged_lf_pf\n    module.launch_all_lf_pf_staged(\n"
    "tvm.error.InternalError: Tensor match failed for\n"
    "    Tensor<256>[strides=<1>, dtype=int32, device=cpu]\n"
    "- Root cause: Dtype value [int32] not in the allowed options: [int64]\n",
], ids=["cuda-host", "dtype-scheduler"])
def test_a_jit_kernels_tensor_check_broken_after_for_is_a_kernel_check(text):
    assert said(text) == (True, "kernel_config_unsupported", "kernel_check_failed")


# near misses: the same words with no InternalError (prose), tvm-ffi's other InternalError, the matcher's words
# with no tensor after them
@pytest.mark.parametrize("text", [
    "it fails with Tensor match failed for\n  Tensor<1152>[strides=<1>, dtype=int64, device=rocm:0] on MI300\n",
    "tvm.error.InternalError: Failed to load the module from /tmp/sgl_jit/hicache.so\n",
    "tvm.error.InternalError: Tensor match failed for\n- Root cause: unknown\n",
], ids=["prose", "module-load", "no-tensor"])
def test_other_texts_are_not_the_kernels_tensor_check(text):
    assert said(text)[2] != "kernel_check_failed"


# --- h73013: vLLM's import notice, printed by each SGLang process that imports vLLM, is one mark ------------------

_NOTICE = "INFO 12-18 14:04:07 __init__.py:207] Automatically detected platform cuda.\n"


def test_h73013_is_read_as_sglangs():
    assert detect_family((REAL / "h73013.log").read_text(encoding="utf-8")) == "sglang"
    assert reading(real("h73013")) == (False, None, "launch")


# the same notice in another form, written from the source (vllm 0.7.3 platforms/__init__.py:207, logged on import
# by SGLang 0.4.4.post1's processes, srt/layers/quantization/__init__.py:9): five processes' notices around one of
# SGLang's stamped lines
def test_many_processes_import_notices_do_not_outvote_sglangs_lines():
    text = _NOTICE * 2 + "[2025-03-01 10:00:00 TP0] Init torch distributed begin.\n" + _NOTICE * 3
    assert detect_family(text) == "sglang"


# near misses: vLLM's own server log with its notice stays vLLM's, and so do notices alone
@pytest.mark.parametrize("text", [
    _NOTICE + "INFO 12-18 14:04:08 api_server.py:912] vLLM API server version 0.7.3\n"
    "INFO 12-18 14:04:08 api_server.py:913] args: Namespace(model='Qwen/Qwen2.5-VL-7B-Instruct')\n"
    + _NOTICE + "INFO 12-18 14:04:20 model_runner.py:1110] Starting to load model Qwen/Qwen2.5-VL-7B-Instruct...\n"
    "WARNING 12-18 14:04:21 sglang_compat.py:10] an sglang-named helper\n",
    _NOTICE * 3,
], ids=["vllm-server", "notices-alone"])
def test_vllms_own_logs_stay_vllms(text):
    assert detect_family(text) == "vllm"


# --- the lines the round cites ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.5.10", "sglang/srt/mem_cache/hi_mamba_radix_cache.py", 604,
     'assert len(node.children) == 0, f"non-leaf, {node.id=}"'),
    ("sglang", "0.5.10", "sglang/srt/mem_cache/hi_mamba_radix_cache.py", 600, "def _evict_regular(self, node"),
    ("sglang", "0.5.10", "sglang/srt/mem_cache/hi_mamba_radix_cache.py", 722, "def _evict_device_leaf(self, x"),
    ("sglang", "0.5.10", "sglang/srt/mem_cache/hi_mamba_radix_cache.py", 735, "return self._evict_regular(x)"),
    ("sglang", "0.5.10", "sglang/srt/mem_cache/hi_mamba_radix_cache.py", 738, "def evict(self, params: EvictParams)"),
    ("sglang", "0.5.10", "sglang/srt/mem_cache/hi_mamba_radix_cache.py", 756,
     "evicted_full, evicted_mamba = self._evict_device_leaf(x)"),
    ("sglang", "0.5.10", "sglang/srt/mem_cache/hi_mamba_radix_cache.py", 367,
     "self.evict(EvictParams(num_tokens=len(full_host_indices)))"),
    ("sglang", "0.5.10", "sglang/srt/mem_cache/mamba_radix_cache.py", 667,
     "self.evict(EvictParams(num_tokens=0, mamba_num=1))"),
    ("sglang", "0.5.10", "sglang/srt/mem_cache/common.py", 229, "def evict_from_tree_cache("),
    ("sglang", "0.5.10", "sglang/srt/mem_cache/common.py", 252, "tree_cache.evict(EvictParams(num_tokens=num_tokens))"),
    ("sglang", "0.5.10", "sglang/srt/mem_cache/common.py", 207, "evict_from_tree_cache(tree_cache, num_tokens)"),
    ("sglang", "0.5.10", "sglang/srt/mem_cache/common.py", 268, "evict_from_tree_cache(tree_cache, num_tokens)"),
    ("sglang", "0.5.10", "sglang/srt/mem_cache/common.py", 405, "evict_from_tree_cache(tree_cache, num_tokens)"),
    ("sglang", "0.5.10", "sglang/srt/managers/schedule_batch.py", 1615, "= alloc_for_extend("),
    ("sglang", "0.5.10", "sglang/srt/managers/schedule_batch.py", 1939,
     "evict_from_tree_cache(self.tree_cache, num_tokens)"),
    ("sglang", "0.5.10", "sglang/srt/managers/schedule_batch.py", 2032,
     "evict_from_tree_cache(self.tree_cache, num_tokens)"),
    ("sglang", "0.5.13", "sglang/srt/mem_cache/hi_mamba_radix_cache.py", 546,
     'assert len(node.children) == 0, f"non-leaf, {node.id=}"'),
    ("sglang", "0.5.13", "sglang/srt/mem_cache/hi_mamba_radix_cache.py", 707,
     "evicted_full, evicted_mamba = self._evict_device_leaf(x)"),
    ("sglang", "0.5.16", "sglang/jit_kernel/include/sgl_kernel/tensor.h", 534, 'oss << "Tensor match failed for ";'),
    ("sglang", "0.5.16", "sglang/jit_kernel/include/sgl_kernel/tensor.h", 536, '<< "\\n- Root cause: "'),
    ("sglang", "0.5.16", "sglang/jit_kernel/include/sgl_kernel/tensor.h", 337, '"Device value ["'),
    ("sglang", "0.5.16", "sglang/jit_kernel/include/sgl_kernel/tensor.h", 339, '"] not in the allowed options: "'),
    ("sglang", "0.5.16", "sglang/jit_kernel/csrc/kvcacheio/staged_write_back.cuh", 247,
     ".with_device<kDLCPU, kDLGPUHost>()"),
    ("sglang", "0.5.16", "sglang/jit_kernel/csrc/kvcacheio/staged_write_back.cuh", 246,
     ".with_dtype<int64_t>(dst_indices_dtype)"),
    ("sglang", "0.5.16", "sglang/jit_kernel/hicache.py", 297, "module.launch_all_lf_pf_staged("),
    ("sglang", "0.5.13", "sglang/srt/mem_cache/mamba_radix_cache.py", 761,
     "mamba_num_evicted = self.evict_mamba(params.mamba_num)"),
    ("sglang", "0.5.13", "sglang/srt/mem_cache/mamba_radix_cache.py", 776,
     'assert x.mamba_value is not None, f"node has no mamba value, {x.id=}"'),
    ("sglang", "0.4.2.post2", "sglang/srt/model_executor/model_runner.py", 346, 'f"Load weight end. "'),
    ("sglang", "0.4.2.post2", "sglang/srt/model_executor/model_runner.py", 186, "self.load_model()"),
    ("sglang", "0.4.2.post2", "sglang/srt/model_executor/model_runner.py", 207, "self.init_memory_pool("),
    ("sglang", "0.4.4.post1", "sglang/srt/model_executor/model_runner.py", 406, 'f"mem usage='),
    ("sglang", "0.4.4.post1", "sglang/srt/layers/quantization/__init__.py", 9,
     "from vllm.model_executor.layers.quantization.aqlm import AQLMConfig"),
], ids=lambda v: str(v).rsplit("/", 1)[-1] if isinstance(v, str) else str(v))
def test_each_line_the_round_cites_is_the_releases(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)


def test_vllms_import_notice_is_at_the_line_h73013_shows():
    source = VLLM_WHEELS / "0.7.3" / "vllm" / "platforms" / "__init__.py"
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert 'logger.info("Automatically detected platform %s.",' in source.read_text().splitlines()[206]
