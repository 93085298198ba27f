"""The rules that held-out round 14 of the vLLM corpus (vo01-vo29, measured once at 4c7f793) showed
missing.

Each rule is general and cited from the source that prints its text (vLLM's wheels 0.7.3, 0.11.1, 0.30.0,
0.33.0, 0.34.0; vllm-ascend v0.9.2rc1 and v0.11.0rc0; torch_npu 2.5.1's ACL headers; pybind11 2.13.6;
abseil's StatusOr; Ray's raylet; LLVM's fatal error handler): the log that showed it is one case, a text
written from the source in another form is the other, and a text beside it that the rule must not take is
a third. The source checks are a test of their own, which skips where the wheels are not unpacked (CI, and
here the wheels other than vLLM's unless unpacked under /work/wheels/<package>-<release>/); the readings
run everywhere.
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.vllm_log import detect_family
from fieldkit import STAMP, assert_in_library_wheel, read_log, reads, vllm_traceback, wheel_text_test


SOURCES = [
    # a LoRA adapter's path with no adapter in it
    ("0.7.3", "vllm/lora/worker_manager.py", 'f"Loading lora {lora_request.lora_name} failed: No adapter "'),
    ("0.30.0", "vllm/exceptions.py", 'f"Loading lora {lora_name} failed: No adapter found for {lora_path}"'),
    ("0.33.0", "vllm/exceptions.py", 'f"Loading lora {lora_name} failed: No adapter found for {lora_path}"'),
    ("0.34.0", "vllm/exceptions.py", 'f"Loading lora {lora_name} failed: No adapter found for {lora_path}"'),
    # an adapter's tensor that is no LoRA weight
    ("0.6.4.post1", "vllm/lora/utils.py", 'raise ValueError(f"{name} is unsupported LoRA weight")'),
    ("0.7.3", "vllm/lora/utils.py", 'raise ValueError(f"{name} is unsupported LoRA weight")'),
    ("0.30.0", "vllm/lora/utils.py", 'raise ValueError(f"{name} is unsupported LoRA weight")'),
    ("0.33.0", "vllm/lora/utils.py", 'raise ValueError(f"{name} is unsupported LoRA weight")'),
    ("0.34.0", "vllm/lora/utils.py", 'raise ValueError(f"{name} is unsupported LoRA weight")'),
    # FlashInfer's fused-MoE kernels and Llama 4 (vLLM 0.11.1: where the lead's wheels are not, this skips)
    ("0.11.1", "vllm/model_executor/layers/quantization/utils/flashinfer_utils.py",
     '"FusedMoE flashinfer kernels are only supported for Llama4"'),
    # vLLM's CUDA graph wrapper entering torch's capture
    ("0.30.0", "vllm/compilation/cuda_graph.py", "with torch.cuda.graph("),
    ("0.34.0", "vllm/compilation/cuda_graph.py", "with torch.cuda.graph("),
    # V0's MQ client on its engine process' death (the LLVM abort's aftermath)
    ("0.7.3", "vllm/engine/multiprocessing/client.py", 'f"Engine process (pid {self._engine_process.pid}) died."'),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


LIBRARY_SOURCES = [
    ("vllm_ascend", "0.9.2rc1", "vllm_ascend/worker/worker_v1.py",
     'f"Available memory: {available_kv_cache_memory}, total memory: {total_npu_memory}"'),
    ("vllm_ascend", "0.11.0rc0", "vllm_ascend/worker/worker_v1.py",
     'f"Available memory: {available_kv_cache_memory}, total memory: {total_npu_memory}"'),
    ("vllm_ascend", "0.9.2rc1", "vllm_ascend/quantization/w8a8.py", 'params_dict["deq_scale"]'),
    ("torch_npu", "2.5.1", "torch_npu/include/third_party/acl/inc/acl/error_codes/rt_error_codes.h",
     "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION      = 507035; // vector core exception"),
    ("torch_npu", "2.5.1", "torch_npu/include/torch_npu/csrc/core/npu/NPUErrorCodes.h",
     '{507035, "The vector core execution is abnormal.'),
    ("pybind11", "2.13.6", "pybind11/include/pybind11/pybind11.h", 'msg += "\\nInvoked with: ";'),
    ("pybind11", "2.13.6", "pybind11/include/pybind11/pybind11.h",
     '" arguments. The following argument types are supported:\\n";'),
]


@pytest.mark.parametrize(("package", "release", "path", "text"), LIBRARY_SOURCES,
                         ids=[f"{p}-{r}:{f}" for p, r, f, _ in LIBRARY_SOURCES])
def test_each_rules_library_text_is_the_librarys_own(package, release, path, text):
    assert_in_library_wheel(package, release, path, text)


# --- Ascend NPU: a core exception through torch_npu's sync, or the runtime's own records -------------

def test_an_acl_sync_returning_a_core_exception_is_an_npu_kernel_fault():
    """vo03: vllm-ascend's engine core raising "RuntimeError: ACL stream synchronize failed, error
    code:507035" at .tolist() of the sampled tokens (the vector core exception, rt_error_codes.h), then
    EngineDeadError; read unknown (the echo) before."""
    assert reads(read_log("vo03.log")) == (True, "cuda_illegal_access", "serving")
    text = vllm_traceback(("vllm_ascend/worker/model_runner_v1.py", 1725, "execute_model", "x.tolist()"),
                          exc="RuntimeError: ACL stream synchronize failed, error code:507015")
    assert reads(text)[:2] == (True, "cuda_illegal_access")
    # a code that is no fault of the device's execution (507033: device setup error) is not this
    assert reads(text.replace("507015", "507033"))[1] != "cuda_illegal_access"


def test_the_ascend_runtimes_own_fault_records_are_an_npu_kernel_fault():
    """vo04: "there is an exception of fftsplus aicore error" (a two-word core name; one word was read
    before), vo08: "rtEventSynchronize:ErrCode=507035, desc=[vector core exception]" (the runtime's
    record of a synchronize returning the vector core exception): CANN lines with no vLLM line, read
    not crashed before. The fixture cuda_illegal_access__0.34.0__ascend-aivec-exception.log shows the
    record in vLLM's log (vllm_npu_kernel_fault)."""
    assert reads(read_log("vo04.log"))[:2] == (True, "cuda_illegal_access")
    assert reads(read_log("vo08.log"))[:2] == (True, "cuda_illegal_access")
    line = ("[ERROR] RUNTIME(9,python3):2026-01-01-00:00:00.000.000 [api_c.cc:755]9 rtStreamSynchronize:"
            "ErrCode=507016, desc=[aicore trap exception], InnerCode=0x715005e\n")
    assert reads(line, family="vllm")[:2] == (True, "cuda_illegal_access")
    # the runtime's record of another error (507033: device setup error) is not a kernel fault
    assert reads(line.replace("507016, desc=[aicore trap exception]", "507033, desc=[device setup error]"),
                 family="vllm")[1] != "cuda_illegal_access"


# --- LoRA adapters: not found, or holding a tensor vLLM cannot place --------------------------------

def test_a_lora_path_with_no_adapter_is_model_not_found():
    """vo05: the V1 engine core's "ValueError: Loading lora ["table_qc failed: No adapter found for
    /data/.../checkpoint-57"]"; read unknown before."""
    assert reads(read_log("vo05.log"))[:2] == (True, "model_not_found")
    text = vllm_traceback(("vllm/lora/worker_manager.py", 138, "_load_adapter", "raise ValueError("),
                          exc="vllm.exceptions.LoRAAdapterNotFoundError: Loading lora sql failed: No adapter "
                              "found for /models/sql-lora")
    assert reads(text)[:2] == (True, "model_not_found")
    # V0's "Loading lora PATH failed" with its own cause below is not this
    assert reads(vllm_traceback(("vllm/lora/worker_manager.py", 108, "_load_adapter", "raise"),
                                exc="RuntimeError: Loading lora /m failed"))[1] != "model_not_found"


def test_an_adapters_tensor_that_is_no_lora_weight_cannot_be_placed():
    """vo06: V0's MQ engine logging "ValueError: base_model.model.lm_head.weight is unsupported LoRA
    weight" (parse_fine_tuned_lora_name); read unknown before. An adapter loads with a request: serving."""
    assert reads(read_log("vo06.log")) == (True, "weights_unreadable", "serving")
    assert reads(STAMP + "ValueError: base_model.model.embed_tokens.weight is unsupported LoRA weight\n",
                 family="vllm")[:2] == (True, "weights_unreadable")
    # a LoRA rank refusal beside the same words is not this
    assert reads(STAMP + "ValueError: LoRA rank 64 is greater than max_lora_rank 8.\n", family="vllm")[1] \
        != "weights_unreadable"


# --- kernels: FlashInfer's fused MoE, LLVM aborting a Triton build ---------------------------------

def test_flashinfers_fused_moe_kernels_refusing_a_model_are_a_kernel_config():
    """vo13: a TP worker's "AssertionError: FusedMoE flashinfer kernels are only supported for Llama4";
    read unknown before."""
    assert reads(read_log("vo13.log"))[:2] == (True, "kernel_config_unsupported")
    text = vllm_traceback(("vllm/model_executor/layers/quantization/utils/flashinfer_utils.py", 133, "f", "assert x"),
                          exc="AssertionError: FusedMoE flashinfer kernels are only supported for Llama4")
    assert reads(text)[:2] == (True, "kernel_config_unsupported")
    # another assertion in the same file is not this
    assert reads(text.replace("are only supported for Llama4", "need a top-k of 1"))[1] \
        != "kernel_config_unsupported"


def test_llvms_fatal_error_is_a_kernel_build_that_killed_the_engine():
    """vo10: "LLVM ERROR: Failed to compute parent layout for slice layout." after a request was added
    on a V100, then V0's "Engine process (pid 50) died." and a stream's error; read one request's error
    (not crashed) before."""
    assert reads(read_log("vo10.log")) == (True, "kernel_compile", "serving")
    assert reads("LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.ldmatrix\n", family="vllm")[:2] \
        == (True, "kernel_compile")
    # LLVM's name inside another message is not its fatal handler's line
    assert reads(STAMP.replace("ERROR", "INFO") + "Triton uses LLVM ERROR handling\n", family="vllm")[1] \
        != "kernel_compile"


# --- a cut capture inside torch's capture_end; a weight's name cut by the paste -----------------------

def test_a_traceback_cut_inside_torchs_capture_end_is_a_graph_capture():
    """vo14: a pytorch-CI worker's traceback through vLLM's CUDAGraphWrapper.__call__ into torch/cuda/
    graphs.py's __exit__ and capture_end, cut before its exception line; read unknown before."""
    assert reads(read_log("vo14.log")) == (True, "cuda_graph_capture", "graph_capture")
    frames = (("vllm/compilation/cuda_graph.py", 266, "__call__", "with torch.cuda.graph(cudagraph):"),
              ("torch/cuda/graphs.py", 268, "__exit__", "self.cuda_graph.capture_end()"),
              ("torch/cuda/graphs.py", 130, "capture_end", "super().capture_end()"))
    assert reads(vllm_traceback(*frames, exc=None))[:2] == (True, "cuda_graph_capture")
    # the same frames ending in an out-of-memory are that
    assert reads(vllm_traceback(*frames, exc="torch.OutOfMemoryError: CUDA out of memory."))[1] == "cuda_oom"


def test_a_weights_keyerror_cut_inside_its_key_is_weights_unreadable():
    """vo18: the engine core's load_weights frames (params_dict[name]) and "KeyError: 'layers.27.self_attn.q"
    cut by the paste inside the key; read unknown before. vo23: Ascend W8A8's "KeyError:
    'layers.0.mlp.gate_up_proj.deq_scale'" alone (deq_scale was not among the tensor suffixes)."""
    assert reads(read_log("vo18.log")) == (True, "weights_unreadable", "load_weights")
    assert reads(read_log("vo23.log"))[:2] == (True, "weights_unreadable")
    frames = (("vllm/model_executor/models/llama.py", 450, "load_weights", "param = params_dict[name]"),)
    assert reads(vllm_traceback(*frames, exc="KeyError: 'model.layers.3.mlp.down_pr"))[:2] \
        == (True, "weights_unreadable")
    # a whole KeyError of no tensor's name (a dict's plain key) under other frames is not this
    assert reads(vllm_traceback(("vllm/config.py", 10, "f", "d[k]"), exc="KeyError: 'rope_type'"))[1] \
        != "weights_unreadable"


# --- torch's store timing out, pasted through grep -------------------------------------------------

def test_a_store_wait_timeout_pasted_through_grep_is_nccl():
    """vo21: one line grep printed with its file's name ("test_node0.out:(Worker pid=N) ERROR ...
    torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: ..."): the name was not peeled
    (no vLLM mark seen) and vLLM's registry lacked the store's timeout; read not crashed before."""
    assert reads(read_log("vo21.log"))[:2] == (True, "nccl")
    line = ("run_node1.log:(Worker pid=7) ERROR 08-31 06:22:53 [multiproc_executor.py:944] torch.distributed."
            "DistStoreError: wait timeout after 600000ms, keys: /default_pg/0//cuda//0\n")
    assert detect_family(line) == "vllm"
    assert reads(line)[:2] == (True, "nccl")
    # a Python warning's "file.py:N:" is no grep prefix (its extension is no log's)
    assert detect_family("setup.py:12: UserWarning: x\n") == "sglang"


# --- vllm-ascend: no memory left for the KV cache --------------------------------------------------

def test_vllm_ascends_zero_available_memory_explains_the_engines_failure():
    """vo26: every TP worker's "Available memory: 0, total memory: 65452113920" (vllm-ascend's worker,
    clamped at zero), then "EngineCore failed to start." with the raise cut; read unknown before."""
    assert reads(read_log("vo26.log")) == (True, "kv_pool_oom", "memory_pool")
    info = "(Worker_TP0 pid=5) INFO 10-28 21:14:49 [worker_v1.py:235] Available memory: {}, total memory: 6545\n"
    dead = ("(EngineCore_DP0 pid=4) ERROR 10-28 21:14:49 [core.py:708] EngineCore failed to start.\n"
            + vllm_traceback(("vllm/v1/engine/core.py", 699, "run_engine_core", "EngineCoreProc()"), exc=None,
                             head="(EngineCore_DP0 pid=4) ERROR 10-28 21:14:49 [core.py:708] "))
    assert reads(info.format(0) + dead)[:2] == (True, "kv_pool_oom")
    # memory left, or the line alone (an INFO line), is not this
    assert reads(info.format(1024) + dead)[1] != "kv_pool_oom"
    assert reads(info.format(0), family="vllm")[0] is False


# --- a compiled binding refusing its arguments ------------------------------------------------------

def test_a_bindings_incompatible_arguments_are_a_dependency_mismatch():
    """vo07: the DP engine core's pybind11 overload list and "Invoked with: <...PrefixStore...>, 0, 2"
    (torch's ProcessGroup constructor called as another torch / torch_npu takes it), the TypeError's own
    line cut; read unknown before."""
    assert reads(read_log("vo07.log"))[:2] == (True, "dependency_mismatch")
    text = vllm_traceback(("vllm/distributed/parallel_state.py", 900, "init", "ProcessGroup(store, 0, 2)"),
                          exc="TypeError: __init__(): incompatible constructor arguments. The following argument "
                              "types are supported:")
    assert reads(text)[:2] == (True, "dependency_mismatch")
    # a Python function's own TypeError about its arguments is not pybind's
    assert reads(text.replace("__init__(): incompatible constructor arguments. The following argument types are "
                              "supported:", "f() got an unexpected keyword argument 'x'"))[1] \
        != "dependency_mismatch"


# --- Ray's list of a lost worker's possible causes; XLA's RESOURCE_EXHAUSTED ------------------------

def test_rays_possible_causes_of_a_lost_worker_are_no_host_oom():
    """vo09: Ray's "A worker died or was killed ... Some common causes include: (1) the process was
    killed by the OOM killer due to high memory usage, (2) ray stop --force was called, or (3) ...":
    a list of possibilities (raylet's HandleClientConnectionError), read host_oom before; the label
    is unknown."""
    assert reads(read_log("vo09.log"))[:2] == (True, "unknown")
    # the kernel's own OOM-kill record, or a line that says so, is still host_oom
    assert reads("[123.4] Out of memory: Killed process 77 (python3)\n", family="vllm")[1] == "host_oom"
    assert reads(STAMP + "Worker 3 was killed by the OOM killer\n", family="vllm")[1] == "host_oom"


def test_xlas_resource_exhausted_is_the_accelerators_memory():
    """vo16: a TPU server's "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Error loading
    program: Attempting to reserve 1.04G at the bottom of memory..."; read unknown before."""
    assert reads(read_log("vo16.log"))[:2] == (True, "cuda_oom")
    text = vllm_traceback(("vllm/v1/worker/tpu_model_runner.py", 1200, "capture_model", "xm.mark_step()"),
                          exc="RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Out of memory allocating "
                              "4096 bytes.")
    assert reads(text)[:2] == (True, "cuda_oom")
    # gRPC's status of the same name (a message too large) is not the accelerator's memory
    assert reads(vllm_traceback(("vllm/x.py", 1, "f", "g()"),
                                exc="grpc.RpcError: status = StatusCode.RESOURCE_EXHAUSTED"))[1] != "cuda_oom"
