"""sglang-jax's KV pool lines: SGLang's JAX port sizing its KV cache from the device's memory and allocating it.

Contract: :data:`JAX_MEMORY_POOL` is one regex (alternatives) of the lines sglang-jax (``sgl_jax``, on TPU)
writes while its model runner sizes the KV cache and its pool allocates the buffers, after the weights are
loaded and before the precompile (:mod:`.precompile_lines`): :mod:`.logtext` reads them as ``memory_pool`` (a
phase marker, as SGLang's "KV Cache is allocated") and as startup lines. Only the pool's own lines count: the
buffers' size per layer and their creation time, which follow the first of them, decide nothing by themselves.

Why a module of its own: logtext.py is at its ~400-line bound (../shared/STYLE.md).
"""

from __future__ import annotations

__all__ = ["JAX_MEMORY_POOL"]

# (round 106) ModelRunner.init_memory_pool, called by initialize after load_model (sgl-project/sglang-jax 8df44747
# python/sgl_jax/srt/model_executor/model_runner.py:138, :151), logs "ModelRunner kv_cache_dtype: ..." (:325), its
# profile_max_num_token "TPU Memory profiling: available_device_memory=...GB, available_kv_cache=...GB, max_tokens=N,
# ..." (:295; an f-string in the first commit, 82500e0a model_runner.py:183), "ModelRunner max_total_num_tokens: N"
# (:389), then builds the pools: the fused KV pool's _create_buffers "Creating fused KV buffers for N layers"
# (mem_cache/memory_pool.py:304) and its end "JAX Fused KV Cache allocated. #tokens: N, ..." (:356; "JAX KV Cache
# allocated." and "JAX MLA KV Cache allocated." in 82500e0a memory_pool.py:329, :869). Later commits move the sizing
# to a mixin and drop the device memory from the profiling line (cddbf6f model_runner_kv_cache_mixin.py:434, :450)
JAX_MEMORY_POOL = (r"\bModelRunner (?:kv_cache_dtype|max_total_num_tokens): |\bTPU Memory profiling: "
                   r"|\bCreating fused KV buffers for \d+ layers\b|\bJAX (?:Fused |MLA )?KV Cache allocated\.")
