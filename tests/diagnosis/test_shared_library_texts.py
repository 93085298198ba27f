"""Library texts both servers meet, read in SGLang's logs too (issue 24, lib28).

vLLM's signatures had texts that come from libraries SGLang loads as well (torch's caching allocator,
the linker under Triton's launcher build, DeepGEMM's JIT, CANN's tiling checks, torch_npu's graph
capture, a Triton kernel's device assert, the hub's 401 / 403, Triton's build failures, the runtime's
"invalid device function") and one from code SGLang copied too (the Marlin shape check): they live in
the base signatures now, with SGLang's advice, and vLLM's signatures reuse them through ``voiced``.
Each case puts the library's line, copied verbatim from the vLLM corpus log that showed it
(tests/fixtures/logs/vllm-real/), into an SGLang-shaped context whose lines are copied from real SGLang
logs (tests/fixtures/logs/real/ h9002, h15008, h22004, h21001, h4020; the 0.5.23 launcher's real run,
tests/fixtures/logs/sglang/healthy__0.5.23__dflash-startup-and-decode.log), with a near miss beside it
that must not be read so. The source checks skip where the wheels are not unpacked.
"""

from __future__ import annotations

import pytest
from fieldkit import VLLM_REAL, library_text_test, reads, said

from ddlab.crashes.kinds import launch, memory
from ddlab.device_crashes import compilers, device, kernels, npu
from ddlab.diagnosis.diagnosis import diagnose
from ddlab.vllm_crashes import adapters, backends, graphs as vllm_graphs, library, messages

LIBRARY_SOURCES = [
    # SGLang's own copy of the Marlin shape check (vLLM's text, in SGLang's wheel)
    ("sglang", "0.5.23", "sglang/srt/layers/quantization/marlin_utils.py",
     'f"Weight output_size_per_partition = "'),
    ("sglang", "0.4.10.post2", "sglang/srt/layers/quantization/marlin_utils.py",
     'f" is not divisible by group_size = {group_size}. "'),
    # SGLang captures NPU graphs with torch_npu's NPUGraph, as vllm-ascend does
    ("sglang", "0.5.23", "sglang/srt/hardware_backend/npu/graph_runner/npu_graph_runner.py",
     "torch.npu.graph("),
    ("sglang", "0.5.13", "sglang/srt/hardware_backend/npu/graph_runner/vit_npu_graph_runner.py",
     "with torch_npu.npu.graph(graph, pool=ViTNpuGraphRunner._graph_memory_pool):"),
    ("torch_npu", "2.5.1", "torch_npu/include/torch_npu/csrc/core/npu/interface/AclInterface.h",
     "aclError AclmdlRICaptureBegin(aclrtStream stream, aclmdlRICaptureMode mode);"),
    # SGLang runs DeepGEMM's JIT kernels, and Triton's launcher links -lcuda
    ("sglang", "0.5.23", "sglang/srt/layers/deep_gemm_wrapper/compile_utils.py", "import deep_gemm"),
    ("triton", "3.4.0", "triton/runtime/build.py", "cc_cmd += [f'-l{lib}' for lib in libraries]"),
]

test_each_rules_library_text_is_in_its_wheel = library_text_test(LIBRARY_SOURCES)


def _suggestion(text: str) -> str:
    return diagnose(text, family="sglang").suggestion or ""


def _library_line(log: str, start: str) -> str:
    """The library's own line in a vLLM corpus log, from ``start`` on (vLLM's process tag and stamp cut)."""
    line = next(ln for ln in (VLLM_REAL / log).read_text().splitlines() if start in ln)
    return line[line.index(start):] + "\n"


# the 0.5.23 launcher's real run (tests/fixtures/logs/sglang/healthy__0.5.23__dflash-startup-and-decode.log)
_STARTED = (
    "[2026-11-30 19:36:09] Load weight begin. avail mem=138.61 GB\n"
    "[2026-11-30 19:36:15] Load weight end. elapsed=5.93 s, type=Qwen3ForCausalLM, avail mem=123.35 GB, "
    "mem usage=15.26 GB.\n"
    "[2026-11-30 19:36:17] Memory pool end. avail mem=19.43 GB\n"
)
_SERVING = _STARTED + (
    "[2026-11-30 19:36:29] INFO:     Application startup complete.\n"
    "[2026-11-30 19:36:31] The server is fired up and ready to roll!\n"
    "[2026-11-30 19:36:54] Decode batch. #running-req: 1, #token: 371, token usage: 0.00, accept len: 3.62, "
    "cuda graph: True, gen throughput (token/s): 188.41, #queue-req: 0, \n"
)
# h9002: the scheduler's serving loop, as a real 0.5.x log prints its traceback
_SCHEDULER_SERVING = (
    "[2025-12-22 11:36:30 TP1 EP1] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/root/temp_can/sglang/python/sglang/srt/managers/scheduler.py", line 2865, '
    "in run_scheduler_process\n"
    "    scheduler.event_loop_overlap()\n"
    '  File "/root/temp_can/sglang/python/sglang/srt/managers/scheduler.py", line 1105, '
    "in event_loop_overlap\n"
    "    batch_result = self.run_batch(batch)\n"
    "                   ^^^^^^^^^^^^^^^^^^^^^\n"
)
# h22004: the scheduler's constructor, as a real 0.5.2x log prints it
_SCHEDULER_INIT = (
    "[2026-09-21 06:49:24 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 5617, '
    "in run_scheduler_process\n"
    "    scheduler = Scheduler(\n"
    "                ^^^^^^^^^^\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 554, in __init__\n'
    "    self.init_model_worker()\n"
)
_LOADING = _STARTED.splitlines(keepends=True)[0]  # the weights' load begun, not ended
_SIGQUIT = "[2025-06-19 15:12:27] Received sigquit from a child process. It usually means the child failed.\n"


# --- torch's caching allocator asserting its NVML query on the out-of-memory path (vy12) ------------------

_NVML = _library_line("vy12.log", "RuntimeError: NVML_SUCCESS == r")


def test_the_allocators_nvml_assert_is_cuda_oom_in_sglangs_log():
    log = _SERVING + _SCHEDULER_SERVING + _NVML + _SIGQUIT
    assert reads(log, family="sglang") == (True, "cuda_oom", "serving")
    assert said(log, family="sglang")[2] == "cuda_oom"


def test_the_allocators_other_asserts_are_no_oom_in_sglangs_log():
    block = _NVML.replace("NVML_SUCCESS == r", "block->allocated")
    assert reads(_SERVING + _SCHEDULER_SERVING + block + _SIGQUIT, family="sglang")[1] != "cuda_oom"


# --- a JIT build that did not link (vy09) and DeepGEMM's cuobjdump assert (vy21) -------------------

_LD = _library_line("vy09.log", "/usr/bin/ld: cannot find -l")
_COLLECT2 = _library_line("vy09.log", "collect2: error: ld returned")
_DEEPGEMM = _library_line("vy21.log", "RuntimeError: Assertion error (")
# h15008: SGLang's DeepGEMM wrapper calling into deep_gemm
_DEEPGEMM_FRAMES = (
    '  File "/home/ubuntuai/sglang/.venv/lib/python3.10/site-packages/sglang/srt/layers/quantization/'
    'deep_gemm_wrapper/entrypoint.py", line 89, in gemm_nt_f8f8bf16\n'
    "    _gemm_nt_f8f8bf16_raw(\n"
    '  File "/home/ubuntuai/sglang/.venv/lib/python3.10/site-packages/deep_gemm/dispatch.py", line 55, '
    "in fp8_gemm_nt\n"
)


def test_a_build_that_did_not_link_is_kernel_compile_in_sglangs_log():
    """The linker's and collect2's lines, then the child's death (the traceback cut from the paste)."""
    log = _STARTED + _LD + _COLLECT2 + _SIGQUIT
    assert said(log, family="sglang")[:2] == (True, "kernel_compile")


def test_the_linkers_warning_is_no_failed_build_in_sglangs_log():
    warned = "/usr/bin/ld: warning: libcudart.so.12, needed by x.so, may conflict with libcudart.so.11\n"
    assert said(_STARTED + warned + _SIGQUIT, family="sglang")[1] != "kernel_compile"


def test_deepgemms_jit_assert_is_kernel_compile_in_sglangs_log():
    log = _SERVING + _SCHEDULER_SERVING + _DEEPGEMM_FRAMES + _DEEPGEMM + _SIGQUIT
    assert said(log, family="sglang") == (True, "kernel_compile", "kernel_compile")
    assert "SGLANG_ENABLE_JIT_DEEPGEMM=0" in _suggestion(log)


def test_deepgemms_other_asserts_are_no_failed_build_in_sglangs_log():
    shape = "RuntimeError: Assertion error (csrc/apis/gemm.hpp:30): n % 64 == 0\n"
    log = _SERVING + _SCHEDULER_SERVING + _DEEPGEMM_FRAMES + shape + _SIGQUIT
    assert said(log, family="sglang")[1] != "kernel_compile"


# --- SGLang's own Marlin shape check (vLLM's text, vs01) and CANN's tiling check (vh29) ------------------

_MARLIN = _library_line("vs01.log", "Weight output_size_per_partition = ")
# the load's frames, as SGLang's model runner loads a GPTQ-Marlin layer (0.5.23 gptq.py create_weights)
_LOAD_FRAMES = (
    '  File "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/gptq.py", line 468, '
    "in create_weights\n"
    "    verify_marlin_supports_shape(\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/marlin_utils.py", line 169, '
    "in verify_marlin_supports_shape\n"
    "    raise ValueError(\n"
)


def test_the_marlin_shape_check_is_kernel_config_in_sglangs_log():
    log = _LOADING + _SCHEDULER_INIT + _LOAD_FRAMES + "ValueError: " + _MARLIN + _SIGQUIT
    assert reads(log, family="sglang") == (True, "kernel_config_unsupported", "load_weights")
    assert "--tp-size" in _suggestion(log)


def test_fp8_block_shape_check_is_not_marlins():
    """SGLang's FP8 block quantization words its own shape check alike: not a Marlin kernel's tile."""
    block = ("ValueError: Weight output_size_per_partition = 4304 is not divisible by weight quantization "
             "block_n = 128.\n")
    log = _LOADING + _SCHEDULER_INIT + block + _SIGQUIT
    assert reads(log, family="sglang")[1] != "kernel_config_unsupported"


_TILING = _library_line("vh29.log", "E89999[PID: ")
# h21001 and h18002: torch_npu's lines around a refused ACL call in a real SGLang Ascend log
_ACL_FAILED = ("[ERROR] 2026-01-05-12:19:12 (PID:1457656, Device:1, RankID:-1) ERR00100 PTA call acl api "
               "failed.\n")


def test_a_cann_tiling_check_is_kernel_config_in_sglangs_log():
    log = (_SERVING + _SCHEDULER_SERVING
           + "RuntimeError: " + _library_line("vh29.log", "npu_fused_infer_attention_score_out_symint:")
           + _ACL_FAILED + "E89999: Inner Error!\n" + _TILING + _SIGQUIT)
    assert said(log, family="sglang")[:2] == (True, "kernel_config_unsupported")


def test_a_cann_record_of_another_file_is_no_tiling_check():
    other = _TILING.replace("fused_infer_attention_score_tiling.cpp", "op_task.cc")
    assert said(_SERVING + _ACL_FAILED + other + _SIGQUIT, family="sglang")[1] != "kernel_config_unsupported"


# --- torch_npu's graph capture refused (vy08), in SGLang's NPU graph runner -----------------------------

_CAPTURE_BEGIN = _library_line("vy08.log", "capture_begin:")
# SGLang's ViT NPU graph runner captures lazily, while serving, with no "Capture cuda graph failed" wrapper
_VIT_FRAMES = (
    '  File "/usr/local/python3.11.13/lib/python3.11/site-packages/sglang/srt/hardware_backend/npu/'
    'graph_runner/vit_npu_graph_runner.py", line 73, in _create_graph\n'
    "    with torch_npu.npu.graph(graph, pool=ViTNpuGraphRunner._graph_memory_pool):\n"
    '  File "/usr/local/python3.11.13/lib/python3.11/site-packages/torch_npu/npu/graphs.py", line 205, '
    "in __enter__\n"
    "    self.npu_graph.capture_begin(\n"
)


def test_an_npu_capture_refused_is_cuda_graph_capture_in_sglangs_log():
    log = _SERVING + _SCHEDULER_SERVING + _VIT_FRAMES + "RuntimeError: " + _CAPTURE_BEGIN + _SIGQUIT
    assert said(log, family="sglang") == (True, "cuda_graph_capture", "npu_capture_failed")
    suggestion = _suggestion(log)
    assert "--enforce-eager" not in suggestion and "vllm" not in suggestion.lower()
    assert "SGLANG_VIT_ENABLE_CUDA_GRAPH=0" in suggestion


def test_an_npu_graph_update_is_not_its_capture_in_sglangs_log():
    """h21001's line: the captured graph's task update before a replay, round 21's rule."""
    update = ("RuntimeError: graph_task_update_end:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:48 "
              "NPU function error: c10_npu::acl::AclmdlRICaptureTaskUpdateEnd(stream), error code is "
              "507000\n")
    log = _SERVING + _SCHEDULER_SERVING + update + _SIGQUIT
    assert said(log, family="sglang")[2] == "npu_graph_update_failed"


# --- a Triton / inductor kernel's device assert (va16) and the hub's 403 (vq13) --------------------------

_TRITON_ASSERT = _library_line("va16.log", "/root/.cache/vllm/torch_compile_cache/")


def test_a_triton_kernels_device_assert_is_an_illegal_access_in_sglangs_log():
    """The kernel's own line (inductor's, its cache path as vLLM's log shows it), the paste cut after it."""
    log = _SERVING + _TRITON_ASSERT * 2 + _SIGQUIT
    assert reads(log, family="sglang")[:2] == (True, "cuda_illegal_access")


def test_a_kernels_printf_with_its_block_and_thread_is_no_assert():
    printed = "block: [9,0,0], thread: [81,0,0] value 3 out of 32000\n"
    assert reads(_SERVING + printed + _SIGQUIT, family="sglang")[1] != "cuda_illegal_access"


_HUB_403 = _library_line("vq13.log", "requests.exceptions.HTTPError: 403 Client Error")
# h4020: transformers' config lookup, as a real SGLang log prints it
_CONFIG_FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/transformers/configuration_utils.py", line 721, '
    "in _get_config_dict\n"
    "    resolved_config_file = cached_file(\n"
    '  File "/usr/local/lib/python3.12/dist-packages/transformers/utils/hub.py", line 322, in cached_file\n'
    "    file = cached_files(path_or_repo_id=path_or_repo_id, filenames=[filename], **kwargs)\n"
)


def test_the_hubs_refusal_is_model_not_found_in_sglangs_log():
    log = _CONFIG_FRAMES + _HUB_403
    assert said(log, family="sglang")[:2] == (True, "model_not_found")
    assert "HF_TOKEN" in _suggestion(log)


def test_the_hubs_server_error_is_no_refusal():
    outage = _HUB_403.replace("403 Client Error: Forbidden", "502 Server Error: Bad Gateway")
    assert said(_CONFIG_FRAMES + outage, family="sglang")[1] != "model_not_found"


# --- Triton's build failures: LLVM's fatal error (vo10), ptxas' (vn31), the driver's (vs24), MLIR's (vs26)

_LLVM = _library_line("vo10.log", "LLVM ERROR: ")
_PTXAS = _library_line("vn31.log", "ptxas /tmp/")
_INVALID_IMAGE = _library_line("vs24.log", "RuntimeError: Triton Error [CUDA]: ")
_PASS_FAILED = _library_line("vs26.log", "torch._inductor.exc.InductorError: ")
_CAPTURING = _STARTED + ("[2026-11-30 19:36:18] Capture cuda graph begin. This can take up to several "
                         "minutes. avail mem=16.45 GB\n")
TRITON_LOGS = {
    "llvm_fatal": _SERVING + _LLVM + _SIGQUIT,
    "ptxas_error": _CAPTURING + _PTXAS + _SIGQUIT,
    "triton_invalid_image": _SERVING + _SCHEDULER_SERVING + _INVALID_IMAGE + _SIGQUIT,
    "triton_pass_failed": _CAPTURING + _SCHEDULER_INIT + _PASS_FAILED + _SIGQUIT,
}


@pytest.mark.parametrize("signature", sorted(TRITON_LOGS))
def test_tritons_build_failures_are_kernel_compile_in_sglangs_log(signature):
    log = TRITON_LOGS[signature]
    assert said(log, family="sglang") == (True, "kernel_compile", signature)
    suggestion = _suggestion(log)
    assert "--enforce-eager" not in suggestion and "~/.cache/vllm" not in suggestion


@pytest.mark.parametrize("other", [
    "ptxas info    : Used 128 registers, 384 bytes cmem[0]\n",
    "RuntimeError: Triton Error [CUDA]: out of memory\n",
], ids=["ptxas-info", "triton-cuda-oom"])
def test_tritons_other_lines_are_no_such_failure(other):
    assert said(_SERVING + _SCHEDULER_SERVING + other + _SIGQUIT, family="sglang")[2] not in TRITON_LOGS


# --- the runtime's "invalid device function" (vn05), SGLang on ROCm too ----------------------------------

_NO_DEVICE_FUNCTION = _library_line("vn05.log", "RuntimeError: HIP error: invalid device function")


def test_no_device_function_is_an_unsupported_gpu_in_sglangs_log():
    log = _SERVING + _SCHEDULER_SERVING + _NO_DEVICE_FUNCTION + _SIGQUIT
    assert said(log, family="sglang") == (True, "unsupported_gpu", "no_device_function")
    assert "sgl-kernel" in _suggestion(log)


def test_another_hip_error_is_no_missing_build():
    other = _NO_DEVICE_FUNCTION.replace("invalid device function", "invalid argument")
    assert said(_SERVING + _SCHEDULER_SERVING + other + _SIGQUIT, family="sglang")[1] != "unsupported_gpu"


# --- one pattern list: vLLM's signatures are the base ones, voiced -----------------------------------------

@pytest.mark.parametrize(("vllms", "base"), [
    ((library, "CUDA_OOM"), (memory, "CUDA_OOM")),
    ((library, "KERNEL_COMPILE"), (device, "KERNEL_COMPILE")),
    ((library, "KERNEL_CONFIG"), (kernels, "KERNEL_CONFIG")),
    ((vllm_graphs, "NPU_CAPTURE"), (npu, "NPU_CAPTURE")),
    ((library, "ILLEGAL_ACCESS"), (device, "ILLEGAL_ACCESS")),
    ((adapters, "LLVM_FATAL"), (compilers, "LLVM_FATAL")),
    ((backends, "PTXAS_ERROR"), (compilers, "PTXAS_ERROR")),
    ((messages, "TRITON_INVALID_IMAGE"), (compilers, "TRITON_INVALID_IMAGE")),
    ((messages, "TRITON_PASS_FAILED"), (compilers, "TRITON_PASS_FAILED")),
    ((backends, "NO_DEVICE_FUNCTION"), (device, "NO_DEVICE_FUNCTION")),
], ids=["cuda_oom", "kernel_compile", "kernel_config_unsupported", "npu_capture_failed",
        "cuda_illegal_access", "llvm_fatal", "ptxas_error", "triton_invalid_image", "triton_pass_failed",
        "no_device_function"])
def test_vllms_signature_reads_the_base_texts_with_no_list_of_its_own(vllms, base):
    """No duplicate pattern lists: vLLM's signature is the base one, its advice in vLLM's words."""
    ours, theirs = getattr(*vllms), getattr(*base, None)
    assert theirs is not None, f"{base[0].__name__} has no {base[1]}"
    assert (ours.patterns, ours.lines, ours.name) == (theirs.patterns, theirs.lines, f"vllm_{theirs.name}")


def test_vllms_model_not_found_adds_only_vllms_own_text():
    """huggingface_hub's 401 / 403 is the base signature's; vLLM adds only its own "Invalid repository ID"."""
    ours, theirs = library.MODEL_NOT_FOUND, launch.MODEL_NOT_FOUND
    assert ours.patterns[:-1] == theirs.patterns and "Invalid repository ID" in ours.patterns[-1]
