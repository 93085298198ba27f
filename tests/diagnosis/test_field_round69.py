"""Held-out round 69 (issue 24): DeepEP's dispatch larger than its buffer, the `kernels` package newer than its caller.

Round 69 (h69001-h69008; excerpts of issue and pull-request threads) was measured once on main at 6f01cf1 (with the
round's logs, ee2b87f): crashed 7/8, kind 5/8, phase 1/1. docs/diagnosis.md, "Held-out round 69", tells the round.
Two misses were ddlab's, one is left:

- h69001, DeepEP's "RuntimeError: Failed: Assertion error .../deep_ep.cpp:1233 '... x.size(0) <=
  num_max_dispatch_tokens_per_rank'": the low-latency dispatch's host check refusing more tokens than the buffer
  was built for (DeepEP v1.2.1 csrc/deep_ep.cpp:1105, :1228; csrc/kernels/exception.cuh:18, :50), which SGLang
  sizes from SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK (0.5.6 layers/moe/token_dispatcher/deepep.py:311-316):
  ``kernel_config_unsupported`` by ``deepep_dispatch_tokens`` (device_crashes/kernels.py).
- h69006, "ValueError: Either a revision or a version must be specified.": kernels 0.15.2's LayerRepository /
  FuncRepository refusing a repository with neither (kernels/layer/layer.py:75-76, layer/func.py:73-74), which
  transformers 5.6.0 builds at import (integrations/hub_kernels.py:89-92) while asking for kernels<0.13:
  ``dependency_mismatch`` by ``kernels_revision_required`` (crashes/kinds/packages.py).
- h69002, one thread's py-spy snapshot "(active+gil)" inside DeepEP's dispatch: a running step or a spin on the
  peers, which one snapshot cannot tell apart; left (crashed, kind in known_misses.json).

No label was disputed. Each positive test here fails on ee2b87f.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, folded_round, said

_IDS = folded_round(REAL_MANIFEST, 69)


def test_round69_is_folded_into_work_with_no_label_disputed():
    assert _IDS == [f"h690{n:02d}" for n in range(1, 9)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == ["h69002"]
    assert KNOWN_MISSES["real"]["h69002"] == ["crashed", "kind"]


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h69001", "deepep_dispatch_tokens"),
    ("h69006", "kernels_revision_required"),
], ids=lambda v: v)
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h69001: DeepEP's low-latency dispatch handed more tokens than its buffer takes ----------------------------

# the same check in other forms, written from DeepEP v1.2.1's source: its dispatch's line, its combine's check
# under SGLang's scheduler frames, the bare EPException text of a build at another path
@pytest.mark.parametrize("text", [
    "RuntimeError: Failed: Assertion error /tmp/deepep/csrc/deep_ep.cpp:1105 'x.size(0) == topk_idx.size(0) and "
    "x.size(0) <= num_max_dispatch_tokens_per_rank'\n",
    "[2025-10-01 10:00:01 DP3 TP3 EP3] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/layers/moe/token_dispatcher/deepep.py", line 620, in '
    "_combine_core\n"
    "    combined_hidden_states, event, hook = buffer.low_latency_combine(\n"
    '  File "/usr/local/lib/python3.12/dist-packages/deep_ep/buffer.py", line 620, in low_latency_combine\n'
    "    combined_x, event, hook = self.runtime.low_latency_combine(x, topk_idx, topk_weights, src_info,\n"
    "RuntimeError: Failed: Assertion error /sgl-workspace/DeepEP/csrc/deep_ep.cpp:1228 'topk_weights.size(0) <= "
    "num_max_dispatch_tokens_per_rank'\n",
    "Failed: Assertion error /build/DeepEP/csrc/deep_ep.cpp:1105 'x.size(0) == topk_idx.size(0) and x.size(0) <= "
    "num_max_dispatch_tokens_per_rank'\n",
], ids=["v1.2.1-dispatch", "combine-traceback", "bare"])
def test_a_deepep_dispatch_over_its_token_buffer_is_a_kernel_refusing_the_config(text):
    assert said(text) == (True, "kernel_config_unsupported", "deepep_dispatch_tokens")


# near misses: the combine's shape check (==, another caller's mistake), DeepEP's CUDA check, SGLang's own assert
# on the setting, prose naming the setting
@pytest.mark.parametrize("text", [
    "RuntimeError: Failed: Assertion error /build/DeepEP/csrc/deep_ep.cpp:1222 'x.size(1) == num_ranks * "
    "num_max_dispatch_tokens_per_rank'\n",
    "RuntimeError: Failed: CUDA error /build/DeepEP/csrc/deep_ep.cpp:112 'invalid resource handle'\n",
    "    assert self.num_max_dispatch_tokens_per_rank <= 1024\nAssertionError\n",
    "I set SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK=1024 and x.size(0) <= num_max_dispatch_tokens_per_rank "
    "still fails\n",
], ids=["shape-check", "cuda-error", "sglang-assert", "prose"])
def test_other_deepep_texts_are_not_read_so(text):
    assert said(text)[2] != "deepep_dispatch_tokens"


# --- h69006: the `kernels` package refusing a repository with neither revision nor version ---------------------

# the same refusal in other forms, written from the source: transformers 5.6.0's import traceback into kernels
# 0.15.2's LayerRepository, the FuncRepository's line bare
@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/transformers/integrations/hub_kernels.py", line 89, in '
    "<module>\n"
    '    "cuda": LayerRepository(\n'
    '  File "/usr/local/lib/python3.12/dist-packages/kernels/layer/layer.py", line 76, in __init__\n'
    '    raise ValueError("Either a revision or a version must be specified.")\n'
    "ValueError: Either a revision or a version must be specified.\n",
    "Either a revision or a version must be specified.\n",
], ids=["transformers-5.6.0-import", "bare"])
def test_a_kernels_repository_without_a_revision_is_a_dependency_mismatch(text):
    assert said(text) == (True, "dependency_mismatch", "kernels_revision_required")


# near misses: both given (the caller's own two arguments), another type, prose
@pytest.mark.parametrize("text", [
    "ValueError: Either a revision or a version must be specified, not both.\n",
    "KeyError: 'Either a revision or a version must be specified.'\n",
    "Does anyone know why either a revision or a version must be specified now?\n",
], ids=["not-both", "keyerror", "prose"])
def test_other_revision_texts_are_not_read_so(text):
    assert said(text)[2] != "kernels_revision_required"


# --- the lines the rules cite (DeepEP's are its repository's, v1.2.1 and 92a14cc: no wheel to check here) -----

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.4.10.post2", "sglang/srt/layers/moe/token_dispatcher/deepep.py", 257,
     '"SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK", 128'),
    ("sglang", "0.5.6", "sglang/srt/layers/moe/token_dispatcher/deepep.py", 312,
     '"SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK", 128'),
    ("sglang", "0.5.6", "sglang/srt/layers/moe/token_dispatcher/deepep.py", 316,
     "assert self.num_max_dispatch_tokens_per_rank <= 1024"),
    ("sglang", "0.5.10", "sglang/srt/environ.py", 392, "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK = EnvInt(128)"),
    ("kernels", "0.15.2", "kernels/layer/layer.py", 76, 'raise ValueError("Either a revision or a version must be '
                                                         'specified.")'),
    ("kernels", "0.15.2", "kernels/layer/func.py", 74, 'raise ValueError("Either a revision or a version must be '
                                                        'specified.")'),
    ("kernels", "0.14.0", "kernels/layer/layer.py", 73, 'raise ValueError("Either a revision or a version must be '
                                                         'specified, not both.")'),
    ("transformers", "5.6.0", "transformers/integrations/hub_kernels.py", 89, '"cuda": LayerRepository('),
    ("transformers", "5.6.0", "transformers-5.6.0.dist-info/METADATA", 62, "Requires-Dist: kernels<0.13,>=0.12.0"),
], ids=lambda v: str(v).rsplit("/", 1)[-1] if isinstance(v, str) else str(v))
def test_each_line_the_rules_cite_is_the_releases(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
