"""The crash signatures ddlab knows, by family: data, one module per family.

``memory`` (the KV pool at startup, CUDA allocations, host RAM), ``slots`` (the
scheduler's slots while serving), ``graphs`` (CUDA graph capture, replay, and the eager
runner that shares their copy helpers), ``launch`` (arguments, ports, model repos, draft
checkpoints), ``packages`` (installed packages that do not match), ``models``
(architectures, model types and config layouts the install does not know), ``weights``
(checkpoint files the loader cannot read or place), ``skipped_imports`` (a library's
notice that it skipped its C++ extension: a warning), ``module_attrs`` (a kernel library's
module without a function SGLang calls), ``runtime`` (NCCL, hangs and health checks),
``rendezvous`` (ranks that never met through torch's store), ``native`` (fatal signals),
``requests`` (one request's error, PD transfers), ``diffusion`` (a request SGLang
Diffusion's worker failed), ``images`` (a request's image the tokenizer manager failed to
preprocess), ``router`` (a request SGLang 0.1.x's router failed to take in, sgl-router
refused or 0.3.x's DP controller dropped), ``caches`` (a prefix-cache option the model's
KV pool cannot take), ``parsers`` (a reasoning parser the model's tokenizer cannot take),
``event_loops`` (an asyncio loop patcher refusing the server's uvloop loop), ``web_deps``
(the HTTP stack's optional package missing when the server builds its routes),
``quant_args`` (a --quantization other than the checkpoint's), ``hybrid_pools`` (an
attention backend asking a hybrid model's KV pool for a layer it does not hold) and
``speculative`` (speculative decoding combined with another feature). The device's own texts (kernel
faults, GPU support, kernel builds and libraries, compilers, NPUs) are the layer above,
:mod:`ddlab.device_crashes`; vLLM's texts on the same kinds, their advice in vLLM's flags
(issue 28), a layer above both, :mod:`ddlab.vllm_crashes` (they reuse these). ``slots``,
``packages``, ``parsers``, ``skipped_imports``, ``module_attrs`` and ``rendezvous`` are
spliced into ``memory``'s, ``launch``'s and ``runtime``'s lists where they stood. Each
module's ``SIGNATURES`` is a list of :class:`ddlab.crashes.signature.Signature`;
:mod:`ddlab.diagnosis.signatures` joins them into the registry.
"""
