"""The crash signatures ddlab knows, by family: data, one module per family.

``memory`` (the KV pool at startup, CUDA allocations, host RAM), ``slots`` (the
scheduler's slots while serving), ``graphs`` (CUDA graph capture, replay, and the eager
runner that shares their copy helpers), ``launch`` (arguments, ports, model repos, draft
checkpoints), ``packages`` (installed packages that do not match), ``models``
(architectures, model types and config layouts the install does not know), ``weights``
(checkpoint files the loader cannot read or place), ``device`` (kernel faults, GPU
support, kernel builds), ``archs`` (kernel libraries with no kernels for this GPU's
architecture), ``compilers`` (JIT compilers aborting on an assertion), ``kernels``
(kernels refusing a model configuration), ``cooperative`` (a cooperative launch refused
for its grid), ``status_checks`` (a kernel library's status check reporting its launch
refused), ``scale_layouts`` (DeepGEMM with no case for the scale format it was handed),
``ocp_fp8`` (Triton's AMD backend with no conversion for an OCP fp8 type the GPU lacks),
``skipped_imports`` (a library's notice that it skipped its C++ extension: a warning),
``module_attrs`` (a kernel library's module without a function SGLang calls),
``plan_dtypes`` (a kernel run on other dtypes than its plan was given),
``tensor_devices`` (a kernel handed a tensor off the GPU), ``npu`` (an Ascend NPU's own
faults and support texts), ``runtime`` (NCCL, hangs and health checks), ``rendezvous``
(ranks that never met through torch's store), ``native`` (fatal signals), ``requests``
(one request's error, PD transfers), ``diffusion`` (a request SGLang Diffusion's worker
failed), ``images`` (a request's image the tokenizer manager failed to preprocess),
``router`` (a request SGLang 0.1.x's router failed to take in, sgl-router refused or
0.3.x's DP controller dropped), ``caches`` (a prefix-cache option the model's KV pool
cannot take), ``parsers`` (a reasoning parser the model's tokenizer cannot take) and
``speculative`` (speculative decoding combined with another feature). vLLM's texts on
the same kinds, their advice in vLLM's flags (issue 28), are a layer of their own above
this one, :mod:`ddlab.vllm_crashes` (they reuse these). ``slots``, ``packages``,
``parsers``, ``archs``, ``compilers``, ``kernels``, ``cooperative``, ``status_checks``,
``scale_layouts``, ``ocp_fp8``, ``skipped_imports``, ``module_attrs``, ``plan_dtypes``,
``tensor_devices``, ``npu`` and ``rendezvous`` are spliced into ``memory``'s,
``launch``'s, ``device``'s and ``runtime``'s lists where they stood (``compilers`` after
the kernel builds that raise). Each module's ``SIGNATURES`` is a list of
:class:`ddlab.crashes.signature.Signature`; :mod:`ddlab.diagnosis.signatures`
joins them into the registry.
"""
