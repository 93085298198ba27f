"""A hybrid model's KV pool asked for a layer it does not hold (round 110).

A hybrid linear-attention model (GDN, Mamba, Kimi linear beside full attention: Qwen3-Next, Qwen3.5) keeps its KV
cache in ``HybridLinearKVPool``, which allocates buffers for the full-attention layers only and maps a model layer
to its buffer through ``_transfer_full_attention_id``; a layer it does not hold (a linear-attention layer) is
refused, "ValueError: layer_id=N not in full attention layers: dict_keys([...])" (0.5.3 mem_cache/memory_pool.py:
704-706, 0.5.9 :1288-1290, 0.5.23 :4462-4464), from ``get_key_buffer`` and ``get_value_buffer`` (0.5.9 :1293,
:1297). The pool's own users ask only for the layers it maps; what asks for another is a component built for
models whose every layer is attention: the aiter and wave attention backends read their ``v_head_dim`` from layer
0's value buffer (0.5.9 layers/attention/aiter_backend.py:126, wave_backend.py:153), where the triton backend asks
a hybrid model's pool for ``get_v_head_dim()`` instead (0.5.9 triton_backend.py:95-100) and 0.5.10's aiter backend
does too, "layer_id=0 may not be a full attention layer" (0.5.10 aiter_backend.py:154-157). The backend cannot
drive this model's layer layout: ``kernel_config_unsupported``, as vLLM's attention backend without the encoder's
attention is (:mod:`ddlab.vllm_crashes.backends`, ``vllm_encoder_attention``).
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES"]

_NOT_HELD = r"\blayer_id=\d+ not in full attention layers\b"
HYBRID_POOL_LAYER = Signature(
    "hybrid_pool_layer", "kernel_config_unsupported",
    "the attention backend asked a hybrid model's KV pool for a layer it does not hold",
    ("This model is hybrid (linear-attention or Mamba layers beside full attention): its KV pool holds the "
     "full-attention layers only, and the attention backend asked it for another (the aiter and wave "
     "backends read layer 0 before 0.5.10). Choose a backend that knows hybrid models "
     "(`--attention-backend triton`), or an SGLang release whose backend asks the pool for its head size "
     "(the aiter backend from 0.5.10).",),
    types=r"(?:\w+\.)*ValueError", patterns=(_NOT_HELD,), priority=70, phase="memory_pool",
    sources=(("sglang 0.5.3", "sglang/srt/mem_cache/memory_pool.py:704"),
             ("sglang 0.5.9", "sglang/srt/mem_cache/memory_pool.py:1288"),
             ("0.5.23", "sglang/srt/mem_cache/memory_pool.py:4462"),
             ("sglang 0.5.9", "sglang/srt/layers/attention/aiter_backend.py:126"),
             ("sglang 0.5.9", "sglang/srt/layers/attention/wave_backend.py:153"),
             ("0.5.10", "sglang/srt/layers/attention/aiter_backend.py:157")))

SIGNATURES = [HYBRID_POOL_LAYER]
