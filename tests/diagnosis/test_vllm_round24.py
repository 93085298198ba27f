"""The rules that held-out round 24 of the vLLM corpus (vz01-vz16, measured once at c04b11c with its logs
308436b) showed missing: a Marlin GEMM finding no thread config for a shape (vz04), vLLM's Ray executor
refusing a placement-group bundle of more than one GPU (vz05), cupy's NCCL binding raising NcclError (vz08), a
MoE model class finding no MoE layer in the checkpoint's config (vz09), the shared-memory queue's stall notice
alone naming no server (vz10), a torch warning's c10 backtrace read as a crash (vz11), a Ray Serve replica's
process tag and OpenAIServing's per-request model check (vz12), and a module imported into the `vllm`
command reaching for a name this vLLM lacks (vz13).

Each rule is general and cited from the source that prints its text (vLLM's and SGLang's wheels; vLLM's CUDA
sources, cupy, torch and Ray by their GitHub commits, which no wheel here holds as text): the log that showed
it is one case, a text written from the source in another form is the other, and a text beside it that the
rule must not take is a third. The source checks skip where the wheels are not unpacked (CI); the readings
run everywhere.
"""

from __future__ import annotations

from fieldkit import library_text_test, read_log, reads, vllm_signature, wheel_text_test

SOURCES = [
    # a MoE model class raising when it finds no MoE layer (others only warn: llama4)
    ("0.11.1", "vllm/model_executor/models/hunyuan_v1.py",
     'raise RuntimeError("No HunYuanMoE layer found in model.layers.")'),
    ("0.11.1", "vllm/model_executor/models/glm4_moe.py",
     'raise RuntimeError("No Glm4MoE layer found in model.layers.")'),
    ("0.34.0", "vllm/model_executor/models/hy_v3.py",
     'raise RuntimeError("No MoE layer found in model.layers.")'),
    ("0.11.1", "vllm/model_executor/models/llama4.py",
     'logger.warning("No Llama4MoE layer found in model.layers.")'),
    # the Ray executor's check of the placement group it runs in
    ("0.34.0", "vllm/v1/executor/ray_utils.py",
     'f"Placement group bundle cannot have more than 1 {device_str}."'),
    ("0.30.0", "vllm/v1/executor/ray_utils.py",
     'f"Placement group bundle cannot have more than 1 {device_str}."'),
    ("0.6.4.post1", "vllm/executor/ray_utils.py", '"Placement group bundle cannot have more than 1 "'),
    # the shared-memory queue's stall notice
    ("0.34.0", "vllm/distributed/device_communicators/shm_broadcast.py",
     '"No available shared memory broadcast block found "'),
    ("0.11.1", "vllm/distributed/device_communicators/shm_broadcast.py",
     '"No available shared memory broadcast block found "'),
    # OpenAIServing's per-request model check
    ("0.6.4.post1", "vllm/entrypoints/openai/serving_engine.py",
     "return any(model.name == model_name for model in self.base_model_paths)"),
    ("0.6.4.post1", "vllm/entrypoints/openai/serving_engine.py",
     "if self._is_model_supported(request.model):"),
    # the chat tracker's method that dots.ocr's patch reads, in the release it was written for
    ("0.6.3.post1", "vllm/entrypoints/chat_utils.py", "def _placeholder_str(self, modality: ModalityStr,"),
    ("0.7.3", "vllm/entrypoints/chat_utils.py", "def _placeholder_str(self, modality: ModalityStr,"),
    # ... and where a later release asks the model class instead (the tracker has no _placeholder_str)
    ("0.30.0", "vllm/entrypoints/chat_utils.py",
     "return self.model_cls.get_placeholder_str(modality, num_items)"),
]
LIBRARY_SOURCES = [
    # SGLang's copy of the queue words its stall notice otherwise: the vLLM text names vLLM
    ("sglang", "0.5.23", "sglang/srt/distributed/device_communicators/shm_broadcast.py",
     '"No available block found in %s second. "'),
    ("sglang", "0.4.10.post2", "sglang/srt/distributed/device_communicators/shm_broadcast.py",
     '"No available block found in %s second. "'),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


test_each_rules_library_text_is_in_its_wheel = library_text_test(LIBRARY_SOURCES)


# --- vz04: a Marlin GEMM with no thread config for the shape ------------------------------------------------
# vllm-project/vllm 025a134 csrc/moe/marlin_moe_wna16/ops.cu (marlin_mm: TORCH_CHECK(is_valid_config(...),
# "Invalid thread config: thread_m_blocks = ", ...)); compiled into vllm/_moe_C, no wheel file holds the text

def test_a_marlin_gemm_without_a_thread_config_is_kernel_config_unsupported():
    """vz04: Ray worker lines ending in the MoE Marlin GEMM's refusal, the API server's traceback cut (read
    unknown before); the dense Marlin GEMM's check, alone."""
    assert reads(read_log("vz04.log"))[:2] == (True, "kernel_config_unsupported")
    dense = ("RuntimeError: Invalid thread config: thread_m_blocks = 1, thread_k = -1, thread_n = -1, "
             "num_threads = -1 for MKN = [16, 4096, 1376] and num_bits = 4, group_size = 128, "
             "has_act_order = 0, is_k_full = 1, has_zp = 0, is_zp_float = 0, max_shared_mem = 101376\n")
    assert reads(dense, family="vllm")[:2] == (True, "kernel_config_unsupported")


def test_the_gemms_shape_checks_are_not_the_thread_config():
    """The same function's shape check (a K not divisible by the group) is not the rule's text."""
    shape = "RuntimeError: prob_k = 1000 is not divisible by group_blocks = 8\n"
    assert vllm_signature(shape) != "vllm_kernel_config_unsupported"


# --- vz05: the Ray executor refusing a placement-group bundle of more than one GPU --------------------------

def test_a_bundle_of_more_than_one_gpu_is_bad_argument():
    """vz05: a Ray Serve controller's three lines through V0's initialize_cluster (read unknown before); the
    V1 executor's wording of the same check (device_str), under an engine core's stamp."""
    assert reads(read_log("vz05.log")) == (True, "bad_argument", "launch")
    v1 = ("(EngineCore_DP0 pid=7) ERROR 03-01 10:00:00 [core.py:708] ValueError: Placement group bundle "
          "cannot have more than 1 GPU.\n")
    assert vllm_signature(v1) == "vllm_placement_bundle"


def test_too_few_gpus_in_the_placement_group_is_not_the_bundle_rule():
    """The next check (the group holds fewer devices than the world size) is not the bundle's layout."""
    short = ("ValueError: The number of required GPUs exceeds the total number of available GPUs in the "
             "placement group. Required number of devices: 4. Total number of devices: 2.\n")
    assert vllm_signature(short) != "vllm_placement_bundle"


# --- vz08: cupy's NCCL binding raising NcclError ------------------------------------------------------------
# cupy/cupy 0fc0619 cupy_backends/cuda/libs/nccl.pyx (NcclError: '%s: %s' % (ERROR2[status], msg);
# check_status)

def test_cupys_nccl_error_is_nccl():
    """vz08: the engine core's last two lines, cupy's check_status frame and its NcclError (read unknown
    before); another status, as a Ray collective raises it."""
    assert reads(read_log("vz08.log"))[:2] == (True, "nccl")
    other = ("cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_UNHANDLED_CUDA_ERROR: unhandled cuda error "
             "(run with NCCL_DEBUG=INFO for details)\n")
    assert reads(other, family="vllm")[:2] == (True, "nccl")


def test_cupys_nccl_import_failing_is_not_an_nccl_error():
    """cupy's warning that it could not load NCCL names no failed call."""
    warned = ("UserWarning: CuPy NCCL library could not be loaded: libnccl.so.2: cannot open shared object "
              "file\n")
    assert vllm_signature(warned) != "vllm_nccl"


# --- vz09: a MoE model class finding no MoE layer -----------------------------------------------------------

def test_a_moe_class_without_a_moe_layer_is_arch_unsupported():
    """vz09: load_model -> initialize_model -> hunyuan_v1's MoE class (read unknown before); GLM-4 MoE's."""
    assert reads(read_log("vz09.log")) == (True, "arch_unsupported", "load_weights")
    glm = "RuntimeError: No Glm4MoE layer found in model.layers.\n"
    assert vllm_signature(glm) == "vllm_moe_layers_missing"


def test_the_warning_of_the_same_text_is_no_crash():
    """Llama 4's and Ernie's classes only log the text as a warning and go on: no crash of its own."""
    warned = "WARNING 11-02 10:00:00 [llama4.py:756] No Llama4MoE layer found in model.layers.\n"
    assert reads(warned, family="vllm")[0] is False


# --- vz10: the shared-memory queue's stall notice alone -----------------------------------------------------

def test_the_stall_notice_alone_names_vllm():
    """vz10: the notice without its logger's stamp (read as SGLang's, not crashed, before): vLLM's text,
    read as vd34 (the same notice with its stamp) is read."""
    assert reads(read_log("vz10.log")) == (True, "hang", "serving")
    assert reads(read_log("vz10.log")) == reads(read_log("vd34.log"))


def test_sglangs_stall_notice_is_not_vllms():
    """SGLang's queue words its notice "No available block found in 60 second.": no vLLM mark."""
    from ddlab.diagnosis.vllm_log import told_family
    assert told_family("No available block found in 60 second. \n") == ("sglang", False)


# --- vz11: a torch warning's c10 backtrace ------------------------------------------------------------------
# pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp:106 (TCPClient::sendRaw: C10D_WARNING("sendBytes
# failed on {}: {}", socket_.repr(), e.what()), then rethrow); ProcessGroupNCCL.cpp's heartbeat LOG(WARNING)
# "Failed to check the \"should dump\" flag on TCPStore" and returns

_FRAMES = ("Exception raised from sendBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:668 (most "
           "recent call first):\nframe #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x80 "
           "(0x7f00 in /usr/lib/python3.12/site-packages/torch/lib/libc10.so)\n")


def test_a_warnings_backtrace_is_not_a_crash():
    """vz11: Modal's viewer lines, the heartbeat's and the store client's [W] warnings around an engine stats
    line, the warning's frames cut (read crashed unknown before); the warning and its frames alone."""
    assert reads(read_log("vz11.log"))[:2] == (False, None)
    warned = ("[rank0]:[W901 07:40:20.971331164 TCPStore.cpp:106] [c10d] sendBytes failed on "
              "SocketImpl(fd=64, addr=[localhost]:35986, remote=[localhost]:45489): Broken pipe\n" + _FRAMES)
    assert reads(warned, family="vllm")[0] is False


def test_a_c10_backtrace_of_no_warning_is_still_a_crash():
    """The same frames under an error line, or alone (a paste cut to the middle of the exception), stay the
    crash they were."""
    errored = ("[rank0]:[E901 07:40:20.971331164 TCPStore.cpp:106] [c10d] sendBytes failed on "
               "SocketImpl(fd=64): Broken pipe\n" + _FRAMES)
    assert reads(errored, family="vllm")[0] is True
    assert reads(_FRAMES.split("\n", 1)[1], family="vllm")[0] is True


# --- vz12: a Ray Serve replica's tag; OpenAIServing's per-request model check -------------------------------
# ray-project/ray 5a7cb61 python/ray/serve/_private/common.py (DeploymentID.to_replica_actor_class_name:
# "ServeReplica:{app_name}:{name}")

_REPLICA = "(ServeReplica:default:VLLMDeployment pid=1328933) "


def test_the_model_check_failing_is_one_requests_error():
    """vz12: a replica's traceback tail in _is_model_supported's generator, the user's backticks around it
    (read as nothing before: the replica's tag was not peeled); the check's caller frame, as V0 prints it."""
    assert reads(read_log("vz12.log")) == (False, "request_error", "serving")
    caller = (f'{_REPLICA}  File "/usr/lib/python3.10/site-packages/vllm/entrypoints/openai/'
              f'serving_engine.py", line 194, in _check_model\n'
              f"{_REPLICA}    if self._is_model_supported(request.model):\n"
              f"{_REPLICA}TypeError: 'NoneType' object is not iterable\n")
    assert vllm_signature(caller) == "vllm_request_model_check"


def test_a_replicas_other_traceback_is_not_a_request():
    """The replica's tag peeled, a traceback elsewhere (the engine's construction) is no request's error."""
    built = (f'{_REPLICA}  File "/usr/lib/python3.10/site-packages/vllm/engine/llm_engine.py", line 300, in '
             f"__init__\n{_REPLICA}    self._initialize_kv_caches()\n{_REPLICA}RuntimeError: boom\n")
    assert reads(built, family="vllm")[0] is True


# --- vz13: a module imported into the `vllm` command expecting another vLLM ---------------------------------

def test_an_import_in_the_vllm_command_failing_on_vllm_is_dependency_mismatch():
    """vz13: dots.ocr's module, added to /opt/conda/bin/vllm, reading a method the installed vLLM lacks, the
    AttributeError cut mid-name (read unknown before); another patched module's whole AttributeError."""
    assert reads(read_log("vz13.log")) == (True, "dependency_mismatch", "launch")
    other = ('Traceback (most recent call last):\n  File "/usr/local/bin/vllm", line 5, in <module>\n'
             "    import my_model_plugin\n"
             '  File "/work/my_model_plugin.py", line 3, in <module>\n'
             "    DefaultModelLoader._prepare_weights = _patched\n"
             "AttributeError: type object 'DefaultModelLoader' has no attribute '_prepare_weights'\n")
    assert vllm_signature(other) == "vllm_patched_entry_mismatch"


def test_the_unpatched_vllm_command_failing_is_not_the_rule():
    """The command pip writes imports only vLLM's own main: its failures are vLLM's, not a patch's."""
    plain = ('Traceback (most recent call last):\n  File "/usr/local/bin/vllm", line 5, in <module>\n'
             "    from vllm.entrypoints.cli.main import main\n"
             '  File "/usr/lib/python3.12/site-packages/vllm/entrypoints/cli/main.py", line 8, in <module>\n'
             "    import vllm.entrypoints.cli.benchmark.main\n"
             "AttributeError: module 'torch' has no attribute 'float8_e8m0fnu'\n")
    assert vllm_signature(plain) != "vllm_patched_entry_mismatch"
