"""sgl-kernel-npu's DeepEP (the Ascend port SGLang's ``--moe-a2a-backend deepep`` loads on an NPU) refusing a
normal-mode dispatch larger than its configured capacity (``kernel_config_unsupported``, round 101).

The Ascend Buffer reads its capacity once, from DEEPEP_NORMAL_LONG_SEQ_ROUND and
DEEPEP_NORMAL_LONG_SEQ_PER_ROUND_TOKENS (both set or neither; unset, 1 round of 8192 tokens; a round at most
256, a round's tokens 32 to 8192, their product at most 131072), and ``get_dispatch_layout`` checks each
dispatch's token count against round * per_round_tokens with EP_HOST_ASSERT, which throws
"Failed: Assertion error FILE:LINE error message or error code is 'COND'" (sgl-kernel-npu e368d3ce
csrc/deepep/deep_ep.cpp:20-23, :49-72, :101; csrc/deepep/exception.hpp:16-17, :28-34), raised in Python as
RuntimeError from deep_ep/buffer.py:187. Later releases spell the same check with its numbers,
"(num_tokens <= configured_capacity) num_tokens (N) must not exceed the configured capacity (C), calculated
as ..." (66fbe4b1 csrc/deepep/deep_ep.cpp:123-126, EP_HOST_ASSERT_S in exception.hpp). CUDA DeepEP's own
low-latency check against num_max_dispatch_tokens_per_rank is :mod:`.kernels`' DEEPEP_DISPATCH_TOKENS (that
module is at its bound). Only these two conditions: the Buffer's range checks of the variables themselves and
its other asserts are not this refusal. :mod:`.device` splices this list after :mod:`.moe_dispatch`'s.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["NPU_DEEPEP_CAPACITY", "SIGNATURES"]

_CAPACITY = (r"Failed: Assertion error \S*\.(?:cpp|hpp):\d+ error message or error code is "
             r"'(?:topk_idx\.size\(0\) <= round \* per_round_tokens'|\(num_tokens <= configured_capacity\) )")
NPU_DEEPEP_CAPACITY = Signature(
    "npu_deepep_capacity", "kernel_config_unsupported",
    "sgl-kernel-npu's DeepEP refused a dispatch larger than its configured capacity",
    ("sgl-kernel-npu's DeepEP (the Ascend NPU build of DeepEP) was handed more tokens in one normal-mode dispatch "
     "than it was configured for: round * per_round_tokens, from DEEPEP_NORMAL_LONG_SEQ_ROUND and "
     "DEEPEP_NORMAL_LONG_SEQ_PER_ROUND_TOKENS (unset, 1 * 8192). Raise their product to the largest batch one "
     "rank prefills (`--max-prefill-tokens`, or a whole prompt where `--chunked-prefill-size -1` turns chunking "
     "off): set both or neither, a round count of at most 256, 32 to 8192 tokens a round, a product of at most "
     "131072.",
     "Or lower the batch to fit: a smaller `--max-prefill-tokens` or a positive `--chunked-prefill-size`."),
    patterns=(_CAPACITY,), lines=(rf"^(?:RuntimeError: )?{_CAPACITY}",), priority=81,
    sources=(("sgl-kernel-npu e368d3ce", "csrc/deepep/deep_ep.cpp:20-23 (MAX_ROUNDS 256, MIN_TOKENS_PER_ROUND 32, "
                                         "MAX_TOKENS_PER_ROUND 8192, MAX_TOTAL_TOKENS 131072), :49-72 (the two "
                                         "variables; unset, round 1 and per_round_tokens 8192), :101 "
                                         "(get_dispatch_layout: topk_idx.size(0) <= round * per_round_tokens)"),
             ("sgl-kernel-npu e368d3ce", "csrc/deepep/exception.hpp:16-17, :28-34 (EP_HOST_ASSERT: Failed: "
                                         "Assertion error FILE:LINE error message or error code is 'COND')"),
             ("sgl-kernel-npu e368d3ce", "python/deep_ep/deep_ep/buffer.py:187 (self.runtime.get_dispatch_layout)"),
             ("sgl-kernel-npu 66fbe4b1", "csrc/deepep/deep_ep.cpp:123-126 (num_tokens must not exceed the "
                                         "configured capacity)")))

SIGNATURES = [NPU_DEEPEP_CAPACITY]
