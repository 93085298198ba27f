"""sglang-jax's precompile lines: SGLang's JAX port compiling its forward for each padded size, its graph capture.

Contract: :data:`JAX_PRECOMPILE` is one regex (alternatives) of the lines sglang-jax (``sgl_jax``, on TPU)
writes while it compiles the model's forward once per padded batch size and token count before it serves,
as SGLang on CUDA captures a graph per batch size: :mod:`.logtext` reads them as ``graph_capture`` (a phase
marker) and as startup lines (a batch line after them is no mid-serving paste). Only the tagged lines of
the scheduler and of the worker's EXTEND/DECODE passes count; the server-args fields that name the
paddings (``precompile_bs_paddings=[...]``, ``--disable-precompile``) are no phase.

(round 117) :data:`FLASHINFER_AUTOTUNE`, SGLang's own line that it starts tuning FlashInfer's kernels on dummy
batches, the first step of its CUDA graph init: read as ``graph_capture`` the same way.

Why a module of its own: logtext.py is at its ~400-line bound (../shared/STYLE.md).
"""

from __future__ import annotations

__all__ = ["JAX_PRECOMPILE", "FLASHINFER_AUTOTUNE"]

# (round 83) The scheduler, unless --disable-jax-precompile, logs "[Scheduler] begins to run worker precompile.",
# runs the worker's run_precompile and logs "[Scheduler] completes worker precompile." (sgl-project/sglang-jax
# 897c212 python/sgl_jax/srt/managers/scheduler.py:288-291); the worker's precompile_extend logs "[EXTEND] begin
# to precompile" (managers/tp_worker.py:185), then "[EXTEND] precompile (bs=N, num_tokens=N)" for each padded pair
# (:191) before running the forward on a dummy batch of that shape (:203), then "[EXTEND] precompile finished in N
# secs" (:206), and precompile_decode "[DECODE] begin to precompile", "[DECODE] precompile (bs=N)", its end line
# (:297, :299, :310). Later commits capitalise them and move them to a compilation manager: "[Scheduler] Begins to
# run worker precompile." (and "... spec_decode worker precompile.", cddbf6f scheduler.py:556-562), "[EXTEND] Begin
# to precompile bs_paddings=[...] token_paddings=[...]", its tqdm bar "[EXTEND] PRECOMPILE", "[EXTEND] Precompile
# finished in N secs" (model_executor/compilation_manager.py:161-168, :204), the same of [DECODE] (:219-226, :275)
JAX_PRECOMPILE = (r"\[(?:EXTEND|DECODE)\] (?:begin to precompile|precompile \(bs=|precompile finished in|PRECOMPILE\b)"
                  r"|\[Scheduler\] (?:begins to run|completes) (?:\w+ )?worker precompile\b")

# (round 117) SGLang's "Running FlashInfer autotune ..." (0.5.10 model_executor/model_runner.py:2099; "... with cache:
# PATH", 0.5.12 :2550, 0.5.13 :2478, and "Running FlashInfer autotune (cache reuse DISABLED via ...", :2487) opens
# kernel_warmup, "Warmup and tune kernels before cuda graph capture" (0.5.12 :2473-2482), which initialize runs after
# the KV pool and right before init_device_graphs (:767, :791); from 0.5.16 the tune runs inside the graph init
# itself: capture_cuda_graphs builds the EagerRunner, whose warmup tunes (0.5.19 model_runner.py:1062,
# model_runner_components/cuda_graph_setup.py:181, runner/eager_runner.py:155, runner/base_runner.py:255;
# the line 0.5.16 runner/flashinfer_autotune.py:154, :161; 0.5.23 :304, :313). Read as graph_capture, as vLLM's
# kernel_warmup -> flashinfer_autotune is (round 85, vllm_frames.py); not the flag disable_flashinfer_autotune
FLASHINFER_AUTOTUNE = r"Running FlashInfer autotune(?: with cache: | \(cache reuse DISABLED\b|\.\.\.)"
