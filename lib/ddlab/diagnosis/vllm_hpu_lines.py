"""Gaudi's vLLM (HabanaAI vllm-fork): the lines its warmup writes where CUDA's vLLM captures its graphs.

Contract: :data:`HPU_WARMUP` is a regular expression (an alternation, no anchors) that matches a line of the HPU
model runner's warmup; :mod:`.vllm_log` reads it as the ``graph_capture`` phase's marker. The HPU worker runs
``warmup_model`` after the KV cache is built, in the step where the GPU worker captures its CUDA graphs
(``_warm_up_model``: vllm-fork v0.6.6.post1+Gaudi-1.20.0 vllm/worker/hpu_worker.py:367 ``_init_cache_engine``,
:372, :392). The warmup runs each bucket (compiled, ``warmup_all_buckets``, phases "Prompt" / "Decode",
worker/hpu_model_runner.py:1732-1735), then captures each HPU graph (``warmup_graphs``, phases "Graph/Prompt" /
"Graph/Decode", :1748), each step logged by ``log_warmup`` (:1726-1730): "[Warmup][Decode][204/416]
batch_size:224 num_blocks:384 free_mem:14.93 GiB". Split from :mod:`.vllm_log` (the phases' table, at its
size limit) as :mod:`.vllm_kv_lines` is.

(vLLM round 104) Later releases of the fork name the graphs' phases in lower case, "Graph/prompt" / "Graph/decode"
(``warmup_graphs``, vllm-fork aice/v1.22.0 17a7946f4 vllm/worker/hpu_model_runner.py:3448; the buckets' "Prompt" /
"Decode" stay, :3537), and log each bucket's query length before its blocks (``log_warmup``, :3413-3421): "[Warmup]
[Graph/prompt][351/352] batch_size:1 query_len:128 num_blocks:1 free_mem:7.476 GiB".
"""

from __future__ import annotations

__all__ = ["HPU_WARMUP"]

HPU_WARMUP = (r"\[Warmup\]\[(?:Graph/)?(?:Prompt|Decode|prompt|decode)\]\[\d+/\d+\] batch_size:\d+ "
              r"(?:seq_len|num_blocks|query_len):\d+")
