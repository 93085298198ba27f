"""vLLM's graph-capture step: the lines, other than its capture bars, that mark it.

Contract: :data:`CAPTURE_STEP` is a regular expression (an alternation, no anchors) that matches a line written in
the step where vLLM captures its graphs; :mod:`.vllm_log` reads it as the ``graph_capture`` phase's marker, beside
the capture bars of its phase table. It holds Gaudi's warmup (:data:`.vllm_hpu_lines.HPU_WARMUP`, round 68) and
(round 75) the GPU worker's two reports that ``compile_or_warm_up_model`` (``_compile_or_warm_up_model`` in
0.34.0) writes right after ``capture_model`` has returned (v1/worker/gpu_worker.py): the graph pool's size against
the profile's estimate, "CUDA graph pool memory: 0.14 GiB (actual), 0.2 GiB (estimated), ..." (:617 (0.18.0), :726
(0.27.1), :1112 (0.34.0); capture_model at :608, :717, :1103), and the memory summary that suggests a
``--kv-cache-memory``, "Free memory on device (23.15/23.56 GiB) on startup. Desired GPU memory utilization is
(0.92, 21.67 GiB). Actual usage is ..." (logger.debug at :393 (0.11.0), :511 (0.14.0), :680 (0.18.0); logger.info
at :789 (0.27.1), :1175 (0.34.0); capture_model at :344, :455, :608, :717, :1103). Both come after the KV cache is
sized and the graphs are captured, before the engine says it is ready ("init engine (profile, create kv cache,
warmup model) took"): the step's end, as "Graph capturing finished" is. (The startup check that refuses too little
free memory words it "... on startup is less than desired GPU memory utilization", a crash's line, not matched
here.) Split from :mod:`.vllm_log` (the phases' table, at its size limit) as :mod:`.vllm_kv_lines` and
:mod:`.vllm_model_lines` are.
"""

from __future__ import annotations

from ddlab.diagnosis.vllm_hpu_lines import HPU_WARMUP

__all__ = ["CAPTURE_STEP"]

CAPTURE_STEP = (
    rf"{HPU_WARMUP}"
    r"|CUDA graph pool memory: [\d.]+ GiB \(actual\), [\d.]+ GiB \(estimated\)"
    r"|Free memory on device \([\d.]+/[\d.]+ GiB\) on startup\. Desired GPU memory utilization is \("
)
