"""The device's own crash texts: kernel faults, kernels with no build for this GPU or model, compilers, NPUs.

A layer of its own above :mod:`ddlab.crashes` (whose Signature type and graph frames it reuses) and
below :mod:`ddlab.vllm_crashes`, which voices these texts in vLLM's flags. :mod:`.device` is the list
in its order, with the others spliced into it where they stood: ``archs`` (kernel libraries with no
kernels for this GPU's architecture), ``compilers`` (JIT compilers aborting, after the kernel builds
that raise), ``kernels`` (kernels refusing a model configuration), ``cooperative`` (a cooperative
launch refused for its grid), ``status_checks`` (a kernel library's status check reporting its launch
refused), ``scale_layouts`` (DeepGEMM with no case for the scale format it was handed), ``ocp_fp8``
(Triton's AMD backend with no conversion for an OCP fp8 type the GPU lacks), ``hostcall`` (HIP refusing a
hostcall kernel's dispatch on a platform without PCIe atomics), ``hip_queue`` (HIP aborting a queue whose
kernel's scratch the runtime could not allocate), ``plan_dtypes`` (a kernel
run on other dtypes than its plan was given), ``tensor_devices`` (a kernel handed a tensor off the GPU),
``npu_deepep`` (sgl-kernel-npu's DeepEP refusing a dispatch past its configured capacity) and ``npu``
(an Ascend NPU's own faults and support texts). It left ``crashes/`` when that folder
reached its share of the library's lines (2026-12-07); :mod:`ddlab.diagnosis.signatures` joins it
into the registry where ``crashes.kinds.device`` stood.
"""
