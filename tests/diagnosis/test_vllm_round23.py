"""The rules that held-out round 23 of the vLLM corpus (vy01-vy27, measured once at b6a4146 with its logs
e1dcc90) showed missing: a client's utility call into the engine core failing and answered (vy25), Blackwell's
CUTLASS scaled-mm refusing block-scaled FP8 (vy06), a JIT build that did not link or whose DeepGEMM kernel could
not be read back (vy09, vy21), torch's allocator asserting its NVML query on the out-of-memory path (vy12), the
ACL runtime refusing an NPU graph capture (vy08), Mooncake refusing to register the KV cache (vy20) and
torch_npu's task queue failing on an HCCL collective (vy27).

Each rule is general and cited from the source that prints its text (vLLM's wheels; vllm-ascend, torch_npu and
Triton by their unpacked wheels; vLLM's CUDA sources, torch, DeepGEMM, Mooncake and torch_npu's C++ by their
GitHub commits, which no wheel holds as text): the log that showed it is one case, a text written from the
source in another form is the other, and a text beside it that the rule must not take is a third. The source
checks skip where the wheels are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from fieldkit import library_text_test, read_log, reads, vllm_signature, wheel_text_test

_INVOKED = 'logger.exception("Invocation of %s method failed", name)'
_INVOKED_V0 = 'logger.exception("Invocation of %s method failed", method_name)'
SOURCES = [
    # the engine core's utility calls: the failure logged and answered
    ("0.34.0", "vllm/v1/engine/core.py", _INVOKED),
    ("0.34.0", "vllm/v1/engine/core.py", 'output.failure_message = f"Call to {name} method failed: {str(e)}"'),
    ("0.33.0", "vllm/v1/engine/core.py", _INVOKED),
    ("0.30.0", "vllm/v1/engine/core.py", _INVOKED),
    ("0.11.1", "vllm/v1/engine/core.py", _INVOKED_V0),
    ("0.7.3", "vllm/v1/engine/core.py", _INVOKED_V0),
    # vLLM's own Mooncake connector refusing a registration
    ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py",
     'raise RuntimeError("Mooncake batch memory registration failed.")'),
]
LIBRARY_SOURCES = [
    ("vllm_ascend", "0.11.0rc0", "vllm_ascend/distributed/mooncake_connector.py",
     'raise RuntimeError("Mooncake memory registration failed.")'),
    ("vllm_ascend", "0.11.0rc0", "vllm_ascend/compilation/acl_graph.py", "with torch.npu.graph(aclgraph"),
    ("torch_npu", "2.5.1", "torch_npu/include/torch_npu/csrc/core/npu/interface/AclInterface.h",
     "aclError AclmdlRICaptureBegin(aclrtStream stream, aclmdlRICaptureMode mode);"),
    ("torch_npu", "2.5.1", "torch_npu/include/torch_npu/csrc/core/npu/interface/AclInterface.h",
     "aclError AclmdlRICaptureEnd(aclrtStream stream, aclmdlRI *modelRI);"),
    ("torch_npu", "2.5.1", "torch_npu/include/torch_npu/csrc/core/npu/NPUGraph.h", "void capture_begin("),
    ("triton", "3.4.0", "triton/runtime/build.py", "cc_cmd += [f'-l{lib}' for lib in libraries]"),
    ("triton", "3.4.0", "triton/backends/nvidia/driver.py", "libraries = ['cuda']"),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


test_each_rules_library_text_is_in_its_wheel = library_text_test(LIBRARY_SOURCES)


# --- vy25: a utility call into the engine core failed and was answered -----------------------------------------

_TAG = "(EngineCore_DP0 pid=19473) ERROR 09-23 19:25:52 [core.py:790] "


def test_a_failed_utility_call_is_the_callers_error_not_the_engines_death():
    """vy25: a rollout server's engine core logs "Invocation of collective_rpc method failed" and the traceback
    of the method it ran (read as the engine dying, unknown, before): EngineCoreProc logs what a utility method
    raised and sends the caller the failure; its loop goes on. Another utility's failure, as 0.34.0 logs it."""
    assert reads(read_log("vy25.log"))[:2] == (False, "request_error")
    assert vllm_signature(read_log("vy25.log")) == "vllm_utility_call_failed"
    other = (f"{_TAG}Invocation of reset_prefix_cache method failed\n{_TAG}Traceback (most recent call last):\n"
             f'{_TAG}  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 2043, in '
             f"_invoke_utility_method\n{_TAG}    result = get_result()\n{_TAG}RuntimeError: cache busy\n")
    assert reads(other, family="vllm")[:2] == (False, "request_error")


def test_the_engine_failing_to_start_is_still_its_death():
    """The engine's own start failure under the same stamp is no utility call: it stays the engine's death."""
    dead = (f"{_TAG}EngineCore failed to start.\n{_TAG}Traceback (most recent call last):\n"
            f'{_TAG}  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 699, in '
            f"run_engine_core\n{_TAG}    engine_core = EngineCoreProc(*args, **kwargs)\n{_TAG}RuntimeError: boom\n")
    assert reads(dead, family="vllm")[0] is True
    assert vllm_signature(dead) != "vllm_utility_call_failed"


# --- vy06: Blackwell's CUTLASS scaled-mm refusing block-scaled FP8 ---------------------------------------------
# vllm-project/vllm 60562b0 csrc/quantization/cutlass_w8a8/scaled_mm_c3x_sm120.cu:22-25; c45614b
# scaled_mm_c3x_sm100.cu (compiled into vllm/_C: no wheel file holds the text)

def test_block_scaled_fp8_on_blackwell_is_unsupported_gpu():
    """vy06: an RTX 5090's traceback through cutlass_scaled_mm ending in the refusal (read unknown before)."""
    assert reads(read_log("vy06.log"))[:2] == (True, "unsupported_gpu")
    alone = "RuntimeError: Currently, block scaled fp8 gemm is not implemented for Blackwell\n"
    assert reads(alone, family="vllm")[:2] == (True, "unsupported_gpu")


def test_the_dtype_check_beside_it_is_not_the_gpus():
    """The same function's next check ("only fp8 gemm is implemented") refuses a dtype, not the GPU."""
    dtype = "RuntimeError: Currently, only fp8 gemm is implemented for Blackwell\n"
    assert reads(dtype, family="vllm")[1] != "unsupported_gpu"


# --- vy09, vy21: a JIT build that did not link; DeepGEMM's cuobjdump on its built kernel -----------------------
# gcc gcc/collect-utils.c do_wait ("%s returned %d exit status"); binutils gold/fileread.cc ("cannot find
# -l%s"); deepseek-ai/DeepGEMM bcd598f csrc/jit/kernel_runtime.hpp:44-45, 1e7740d csrc/utils/exception.hpp

def test_a_jit_build_that_did_not_link_is_kernel_compile():
    """vy09: after the encoder-cache profiling line, "/usr/bin/ld: cannot find -lcuda" and collect2's line,
    then the engine's start failure cut (read unknown before). The linker's line alone, in another form."""
    assert reads(read_log("vy09.log")) == (True, "kernel_compile", "memory_pool")
    ld = "/usr/bin/x86_64-linux-gnu-ld: cannot find -lcuda: No such file or directory\n"
    assert reads(ld, family="vllm")[:2] == (True, "kernel_compile")


def test_deepgemms_jit_assert_on_cuobjdump_is_kernel_compile():
    """vy21: the engine core's last line under the API server's prefix (read unknown before)."""
    assert reads(read_log("vy21.log"))[:2] == (True, "kernel_compile")
    other = ("RuntimeError: Assertion error (/tmp/DeepGEMM/csrc/jit/kernel_runtime.hpp:45): exit_code == 0\n")
    assert vllm_signature(other) == "vllm_kernel_compile"


def test_other_linker_and_deepgemm_texts_are_not_a_failed_build():
    """The linker's warning and DeepGEMM's other asserts (the symbol count, a shape) are not the rule's."""
    warned = "/usr/bin/ld: warning: libcudart.so.12, needed by x.so, may conflict with libcudart.so.11\n"
    assert vllm_signature(warned) != "vllm_kernel_compile"
    shape = "RuntimeError: Assertion error (csrc/apis/gemm.hpp:30): n % 64 == 0\n"
    assert vllm_signature(shape) != "vllm_kernel_compile"


# --- vy12: torch's allocator asserting its NVML query on the out-of-memory path --------------------------------
# pytorch/pytorch eb42ad6 c10/cuda/CUDACachingAllocator.cpp: reportProcessMemoryInfo's
# TORCH_INTERNAL_ASSERT(NVML_SUCCESS == r), called only in malloc's !block_found branch

def test_the_allocators_nvml_assert_is_cuda_oom():
    """vy12: the sampler's sort under the engine core's construction, the assert (read unknown before)."""
    assert reads(read_log("vy12.log"))[:2] == (True, "cuda_oom")
    other = ('RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":838, '
             "please report a bug to PyTorch.\n")
    assert vllm_signature(other) == "vllm_cuda_oom"


def test_the_allocators_other_asserts_are_not_an_oom():
    """Another assert of the same file (a block's state) is no out-of-memory path."""
    block = ('RuntimeError: block->allocated INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":'
             "1500, please report a bug to PyTorch.\n")
    assert reads(block, family="vllm")[1] != "cuda_oom"


# --- vy08: the ACL runtime refusing an NPU graph capture -------------------------------------------------------

_NPU_CHECK = "capture_begin:../torch_npu/csrc/core/npu/NPUGraph.cpp:230 NPU function error: "


def test_an_npu_capture_refused_is_cuda_graph_capture():
    """vy08: NPUModelRunner re-raising torch_npu's capture_begin failure (read unknown at launch before); the
    capture's end refused, as torch_npu checks it."""
    assert reads(read_log("vy08.log")) == (True, "cuda_graph_capture", "graph_capture")
    end = ("RuntimeError: capture_end:../torch_npu/csrc/core/npu/NPUGraph.cpp:260 NPU function error: "
           "c10_npu::acl::AclmdlRICaptureEnd(capture_stream_, &model_ri_), error code is 507899\n")
    assert reads(end, family="vllm")[:2] == (True, "cuda_graph_capture")


def test_an_npu_graph_update_is_not_its_capture():
    """The graph's task update before a replay is another ACL call (round 21's rule): not the capture's."""
    update = f"RuntimeError: {_NPU_CHECK}c10_npu::acl::AclmdlRICaptureTaskUpdateBegin(stream), error code is 1\n"
    assert vllm_signature(update) != "vllm_npu_capture_failed"


# --- vy20: Mooncake refusing to register the KV cache ----------------------------------------------------------
# kvcache-ai/Mooncake ascend_direct_transport.cpp (AscendDirectTransport::registerLocalMemory)

_REGISTERING = ("I0805 09:42:09.763092 80495 ascend_direct_transport.cpp:444] AscendDirectTransport register mem "
                "addr:0x12da73a00000, length:183369728, location:, mem type:0\n")


def test_mooncake_refusing_the_kv_cache_is_pd_transfer():
    """vy20: a decode worker's registration lines, Mooncake's "Register mem ret:103900." and the worker's
    exception in initialize_from_config, cut (read not crashed before); the connector's own raise, alone."""
    assert reads(read_log("vy20.log")) == (True, "pd_transfer", "memory_pool")
    raised = "RuntimeError: Mooncake memory registration failed.\n"
    assert reads(raised, family="vllm")[:2] == (True, "pd_transfer")


def test_mooncakes_registration_lines_alone_are_no_failure():
    """The transport's INFO lines registering each region say nothing went wrong."""
    assert reads(_REGISTERING, family="vllm")[0] is False


# --- vy27: torch_npu's task queue failing on an HCCL collective ------------------------------------------------
# Ascend/pytorch torch_npu/csrc/core/npu/NPUQueue.cpp (Enqueue: CAN_EXIT; 0041145 get_func_error_msg)

_PTA = ('[ERROR] APP(80812,):2026-06-17-02:21:44.141.006 [log_inner.cpp:78]81094 build/CMakeFiles/torch_npu.dir/'
        'compiler_depend.ts:Enqueue:526: "[PTA]:"Inner error happened with CAN_EXIT status, detail: the current '
        'working operator name is {}""\n')


def test_an_hccl_collective_failing_in_the_task_queue_is_nccl():
    """vy27: only torch_npu's CAN_EXIT lines naming HcclAllGather (read not crashed before, no server named);
    the first throw's text naming another HCCL collective."""
    assert reads(read_log("vy27.log"))[:2] == (True, "nccl")
    thrown = ("RuntimeError: The Inner error is reported as above. The process exits for this inner error, and "
              "the current working operator name is HcclAllReduce.\n")
    assert reads(thrown, family="vllm")[:2] == (True, "nccl")


def test_another_operator_failing_in_the_task_queue_is_not_a_collective():
    """The same line naming a compute operator is no collective's failure."""
    assert reads(_PTA.format("MatMulV2"), family="vllm")[1] != "nccl"
