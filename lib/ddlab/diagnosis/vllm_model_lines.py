"""vLLM's model construction: the lines its layers write while the model is built, before any weight is read.

Contract: :data:`MODEL_BUILD` is a regular expression (an alternation, no anchors) that matches a line a layer of
the model writes from its constructor; :mod:`.vllm_log` reads it as the ``load_weights`` phase's marker. vLLM
builds the model only in ``initialize_model``, which the loaders' ``load_model`` calls (model_executor/
model_loader/base_loader.py:49 (0.13.0), :54 (0.34.0)): a line from a layer's ``__init__`` is the weights' step
(the round-44 reading of a model's constructor frames, :mod:`.vllm_frames`). Split from :mod:`.vllm_log` (the
phases' table, at its size limit) as :mod:`.vllm_kv_lines` and :mod:`.vllm_hpu_lines` are.
"""

from __future__ import annotations

__all__ = ["MODEL_BUILD"]

MODEL_BUILD = (
    # (round 69) a MoE layer's expert placement under expert parallelism, logged once per process (info_once) by
    # FusedMoE.__init__ (model_executor/layers/fused_moe/layer.py:854 (0.10.2), :494 (0.13.0), :409 (0.20.0)) and
    # by ExpertMapManager.__init__ (fused_moe/expert_map_manager.py:250 (0.34.0)), which FusedMoEFactory builds
    # (layer.py:295 (0.34.0)): "[EP Rank 0/16] Expert parallelism is enabled. Expert placement strategy: linear."
    r"\[EP Rank \d+/\d+\] Expert parallelism is enabled\."
    # (round 75) the unquantized MoE method's notice that FlashInfer's CUTLASS MoE could serve expert parallelism,
    # logged once per process (info_once) from UnquantizedFusedMoEMethod.__init__ (model_executor/layers/fused_moe/
    # layer.py:327 (0.11.0), the class at :291; unquantized_fused_moe_method.py:89 (0.13.0), :84 (0.14.0); in 0.15.1
    # from select_unquantized_moe_backend, oracle/unquantized.py:82, which that __init__ calls,
    # unquantized_fused_moe_method.py:56), the method FusedMoE.__init__ builds for an unquantized layer (layer.py:1103
    # (0.11.0)); "MoE" as the releases write it, or "MOE" as a paste of it may
    r"|FlashInfer CUTLASS M[Oo][Ee] is available for EP but not enabled"
)
