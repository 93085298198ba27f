"""vLLM's crash signatures: its texts on ddlab's kinds, their advice in vLLM's words and flags.

A layer of its own above :mod:`ddlab.crashes` (SGLang's signatures and the Signature type) and
:mod:`ddlab.device_crashes` (the device's own texts), whose library signatures it reuses with vLLM's
advice, and below :mod:`ddlab.diagnosis`, which joins both families into their registries.
:mod:`.signatures` is the list in its order; the families: ``library`` (torch, NCCL, Hugging Face
and the other libraries both servers use, voiced in vLLM's flags), ``speculative``, ``graphs``,
``requests`` (one request's errors), ``loading`` (a start refused by the weight loaders or the
config's checks), ``engine`` (the engine's death, its echoes and stalls), ``backends`` (other
accelerators and features), ``adapters`` (LoRA adapters, Ascend / TPU, LLVM, bindings), ``ascend``
(vllm-ascend's NPU texts) and ``messages`` (V0's engine messages, NIXL), ``wna16`` (the quantized
MoE GEMM refusing the experts' shapes, the CUTLASS scaled GEMM refusing a weight's dims),
``moe_schemes`` (an FP8 MoE method refusing the checkpoint's scale layout), ``kv_cache_dtypes``
(``--kv-cache-dtype bfloat16`` refused by the cache write), ``attention_backends`` (the backend forced by
``--attention-backend`` refusing the model's attention), ``processors`` (a
multimodal model's HF processor not fitting vLLM's call), ``hub`` (huggingface.co unreachable
through TLS or a proxy, a resumed download refused), ``entrypoints`` (the OpenAI server's own
start-up checks and what it loads beside the engine).
"""
