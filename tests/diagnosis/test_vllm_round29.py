"""The rules that held-out round 29 of the vLLM corpus (w2901-w2920, measured once at 7f81b85 with its logs
c47461c) showed missing: a systemd journal whose last start shows nothing yet (w2902, a restart loop), and
vllm-ascend's texts of CANN's runtime, CANN's op runtime, triton-ascend and vllm-ascend's ACL graphs (w2904 a
stream synchronized while captured, w2906 an AI CPU kernel's exception, w2907 no kernel package for an op,
w2909 a captured graph's parameters updated with a None, w2910 a decode batch padded to a FULL graph's size,
w2915 Triton's launcher failing to build, w2920 the EAGLE drafter's chunked-prefill mask, in a paste whose
lines keep only the logger's "[file.py:N]" tag).

Each rule is general and cited from the source that prints its text (vllm-ascend's and triton-ascend's wheels;
CANN's runtime and opbase, hicann/runtime and hicann/opbase): the log that showed it is one case, a text
written from the source in another form is the other, and a text beside it that the rule must not take is a
third. The source checks skip where the wheels are not unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from fieldkit import assert_in_wheel, library_text_test, read_log, reads, vllm_signature, vllm_traceback

test_each_rules_library_text_is_in_its_wheel = library_text_test([
    # vllm-ascend updating a captured ACL graph's attention parameters before its replay
    ("vllm_ascend", "0.11.0rc0", "vllm_ascend/compilation/acl_graph.py",
     "def update_attn_params(update_stream, forward_context, runtime_shape):"),
    ("vllm_ascend", "0.11.0rc0", "vllm_ascend/compilation/acl_graph.py",
     "    for key, param, handle, event in zip(\n            forward_context.attn_metadata,"),
    ("vllm_ascend", "0.12.0rc1", "vllm_ascend/compilation/acl_graph.py",
     "def update_mla_attn_params(update_stream, forward_context, runtime_shape,"),
    # vllm-ascend padding a uniform decode batch to the FULL decode graph's request count
    ("vllm_ascend", "0.12.0rc1", "vllm_ascend/worker/model_runner_v1.py",
     "if self.compilation_config.cudagraph_mode.decode_mode() == CUDAGraphMode.FULL and \\\n"
     "                uniform_decode:\n                num_reqs_padded = num_input_tokens"),
    ("vllm_ascend", "0.12.0rc1", "vllm_ascend/worker/model_runner_v1.py",
     "self.query_start_loc.gpu[num_reqs + 1:num_reqs_padded +"),
    # triton-ascend building a kernel's launcher against torch_npu's headers
    # vllm-ascend's EAGLE proposer building its chunked-prefill mask from the draft's positions
    ("vllm_ascend", "0.11.0rc0", "vllm_ascend/spec_decode/eagle_proposer.py",
     "attn_mask = self.attn_mask_builder.get_splitfuse_attn_mask(\n            seq_lens, target_positions,"),
    ("vllm_ascend", "0.11.0rc0", "vllm_ascend/attention/attention_mask.py",
     "attn_mask = torch.index_select(self.attn_mask_cache,"),
    ("triton-ascend", "3.2.0", "triton/backends/ascend/utils.py",
     'raise RuntimeError(f"Failed to compile {src_path}, error: {result.stderr}")'),
    ("triton-ascend", "3.2.0", "triton/backends/ascend/driver.py",
     'name = f"launcher_cxx11abi{use_cxx11_abi}"'),
])

_JOURNAL = "Feb 22 06:52:{s:02d} host {who}: "


def _journal(*lines: tuple[str, str]) -> str:
    return "".join(_JOURNAL.format(s=i, who=who) + msg + "\n" for i, (who, msg) in enumerate(lines))


_FAILED = [("python3.12[14663]",
            "(EngineCore_DP0 pid=14663) ValueError: Free memory on device cuda:0 (0.85/23.56 GiB) on startup "
            "is less than desired GPU memory utilization (0.9, 21.2 GiB). Decrease GPU memory utilization or "
            "reduce GPU memory used by other processes."),
           ("systemd[1643]", "openclaw-vllm.service: Main process exited, code=exited, status=1/FAILURE"),
           ("systemd[1643]", "openclaw-vllm.service: Failed with result 'exit-code'."),
           ("systemd[1643]", "openclaw-vllm.service: Scheduled restart job, restart counter is at 65."),
           ("systemd[1643]", "Started openclaw-vllm.service - OpenClaw local vLLM server.")]
_FIRST = [("systemd[1643]", "Started openclaw-vllm.service - OpenClaw local vLLM server."),
          ("python3.12[14610]", "(APIServer pid=14610) INFO 02-22 06:52:40 [utils.py:253] non-default "
                                "args: {}")]


# --- w2902: a restart loop's journal ending on systemd's "Started" line ------------------------------------

def test_a_start_with_nothing_after_it_is_no_run_yet():
    """w2902: a user unit in a restart loop, every start dying of vLLM's startup free-memory check, the
    journal (`journalctl -n 200`) ending on the next "Started" line; the last run (that line alone) read not
    crashed before. The run before it is the last that shows anything: its crash."""
    assert reads(read_log("w2902.log")) == (True, "cuda_oom", "launch")
    assert reads(_journal(*_FIRST, *_FAILED)) == (True, "cuda_oom", "launch")


def test_a_start_the_server_wrote_after_is_the_run_read():
    """A last start followed by a line of the server's own is a run: the crash before it is not the verdict
    (a unit that came up again, as w2901's second start does)."""
    after = ("python3.12[14700]", "(APIServer pid=14700) INFO 02-22 06:53:00 [utils.py:253] non-default "
                                  "args: {}")
    assert reads(_journal(*_FIRST, *_FAILED, after))[:2] == (False, None)
    assert reads(read_log("w2901.log")) == (False, None, "ready")


# --- w2904: CANN refusing to synchronize a stream being captured -------------------------------------------

_WORKER = ("vllm/v1/executor/multiproc_executor.py", 224, "get_response", "raise RuntimeError(")
_SYNC = ("RuntimeError: Worker failed with error 'operator():build/CMakeFiles/torch_npu.dir/"
         "compiler_depend.ts:47 NPU function error: c10_npu::acl::AclrtSynchronizeStreamWithTimeout("
         "copy_stream), error code is {code}")


def test_a_sync_inside_an_acl_graph_capture_is_cuda_graph_capture():
    """w2904: compile_or_warm_up_model's 'Worker failed with error' wrapping torch_npu's failed stream
    synchronize (107027) and CANN's "Not allow to synchronize captured-stream, stream_id=37." with
    "reason=[stream is captured]"; read unknown before. The device-wide sync's wording reads the same."""
    assert reads(read_log("w2904.log")) == (True, "cuda_graph_capture", "graph_capture")
    assert vllm_signature(read_log("w2904.log")) == "vllm_npu_capture_sync"
    device = vllm_traceback(_WORKER, exc=_SYNC.format(code=107027) + "\nEE9999: Not allow to synchronize "
                                         "captured-stream, device_id=0, stream_id=9.")
    assert vllm_signature(device) == "vllm_npu_capture_sync"


def test_another_failed_synchronize_is_not_the_capture():
    """A synchronize that failed for another reason (the model stream's execution) is no capture's."""
    other = vllm_traceback(_WORKER, exc=_SYNC.format(code=507011) + "\n       rtStreamSynchronizeWithTimeout "
                                        "execute failed, reason=[the model stream execute failed]")
    assert vllm_signature(other) != "vllm_npu_capture_sync"


# --- w2906: an AI CPU kernel's exception -------------------------------------------------------------------

_AICPU = ("E39999[PID: 833] 2025-11-18-10:35:31.222.032 (E39999):  The error from device(chipId:0, dieId:0), "
          "serial number is 3, an exception occurred during {what}AICPU execution, stream_id:45, task_id:1, "
          "errcode:135175, msg:aicpu execute failed.")


def test_an_aicpu_exception_is_cuda_illegal_access():
    """w2906: docker compose's output of a DP engine core, 'Worker failed with error' wrapping a failed
    synchronize (507011) over CANN's record of an AI CPU exception in MoeDistributeDispatchV2; read unknown
    before. The fftsplus form of the record reads the same."""
    assert reads(read_log("w2906.log"))[:2] == (True, "cuda_illegal_access")
    assert vllm_signature(read_log("w2906.log")) == "vllm_npu_aicpu_fault"
    ffts = vllm_traceback(_WORKER, exc=_SYNC.format(code=507011) + "\n" + _AICPU.format(what="fftsplus "))
    assert reads(ffts, "vllm")[:2] == (True, "cuda_illegal_access")


def test_another_device_record_is_not_an_aicpu_exception():
    """A DVPP task's record from the same reporter names no AI CPU."""
    dvpp = vllm_traceback(_WORKER, exc=_SYNC.format(code=507011) + "\nThe error from device(chipId:0, "
                                       "dieId:0), serial number is 3, an exception occurred during DVPP task "
                                       "execution")
    assert vllm_signature(dvpp) != "vllm_npu_aicpu_fault"


# --- w2907: CANN finding no kernel package for an op --------------------------------------------------------

def test_no_kernel_config_is_dependency_mismatch():
    """w2907: torch's [rank0] traceback of an offline LLM(...) whose first NPU op (aclnnInplaceNormal, 561103)
    fails on CANN's "Parse dynamic kernel config fail." (SGLang's ascend_kernel_config_missing); read unknown
    before: vLLM's registry lacked it."""
    assert reads(read_log("w2907.log")) == (True, "dependency_mismatch", "load_weights")
    assert vllm_signature(read_log("w2907.log")) == "vllm_ascend_kernel_config_missing"


def test_another_aclnn_failure_is_not_the_kernel_config():
    """The same 561103 with another inner error (a null executor) is not the missing kernel package."""
    other = vllm_traceback(("vllm/model_executor/models/opt.py", 59, "__init__", "super().__init__()"),
                           exc="RuntimeError: normal_:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:37 "
                               "NPU function error: call aclnnInplaceNormal failed, error code is 561103")
    assert vllm_signature(other) != "vllm_ascend_kernel_config_missing"


# --- w2909: a captured ACL graph's parameters updated with a None -------------------------------------------

_UPDATE = ("vllm_ascend/compilation/acl_graph.py", 248, "update_mla_attn_params",
           "for key, param, handle, event in zip(")


def test_a_none_in_the_acl_graph_update_is_cuda_graph_replay():
    """w2909: eleven workers' tracebacks interleaved line by line, each through _dummy_run -> the MTP
    drafter's dummy_run -> update_mla_attn_params, ending in "TypeError: 'NoneType' object is not iterable";
    read unknown before. 0.11.0rc0's update_attn_params reads the same."""
    assert reads(read_log("w2909.log"))[:2] == (True, "cuda_graph_replay")
    assert vllm_signature(read_log("w2909.log")) == "vllm_acl_graph_update_none"
    v011 = vllm_traceback(("vllm_ascend/worker/model_runner_v1.py", 1585, "execute_model",
                           "update_attn_params(self.update_stream, forward_context,"),
                          ("vllm_ascend/compilation/acl_graph.py", 196, "update_attn_params",
                           "for key, param, handle, event in zip("),
                          exc="TypeError: 'NoneType' object is not iterable")
    assert reads(v011, "vllm")[:2] == (True, "cuda_graph_replay")


def test_a_none_elsewhere_in_the_runner_is_not_the_update():
    """The same TypeError raised in the model runner's own code, no graph update among the frames."""
    other = vllm_traceback(("vllm_ascend/worker/model_runner_v1.py", 2258, "_dummy_run",
                            "for x in self.mask:"),
                           exc="TypeError: 'NoneType' object is not iterable")
    assert vllm_signature(other) != "vllm_acl_graph_update_none"


# --- w2915: triton-ascend failing to build a kernel's launcher ----------------------------------------------

def test_a_launcher_build_failure_is_kernel_compile():
    """w2915: a DP engine core's 'Worker failed with error' wrapping "NPUModelRunner init failed, error is
    Failed to compile /tmp/.../launcher_cxx11abi1.cxx, error: " and clang's errors in torch_npu's headers
    against CANN 8.5's; read unknown before. The launcher of the other ABI reads the same."""
    assert reads(read_log("w2915.log"))[:2] == (True, "kernel_compile")
    assert vllm_signature(read_log("w2915.log")) == "vllm_triton_ascend_launcher"
    abi0 = vllm_traceback(_WORKER, exc="RuntimeError: Worker failed with error 'Failed to compile "
                                       "/tmp/tmpab12/launcher_cxx11abi0.cxx, error: 1 error generated.'")
    assert reads(abi0, "vllm")[:2] == (True, "kernel_compile")


def test_a_compile_message_without_the_compilers_error_is_not_the_launcher():
    """triton-ascend's remote driver's bare "Failed to compile <path>" (no compiler error) is not it."""
    remote = vllm_traceback(_WORKER, exc="RuntimeError: Failed to compile /tmp/x/launcher.so")
    assert vllm_signature(remote) != "vllm_triton_ascend_launcher"


# --- w2920: the EAGLE drafter's chunked-prefill mask, lines with the logger's tag alone ---------------------

_PROPOSE = (("vllm_ascend/spec_decode/eagle_proposer.py", 1223, "_propose",
             "attn_mask = self.attn_mask_builder.get_splitfuse_attn_mask("),
            ("vllm_ascend/attention/attention_mask.py", 82, "get_splitfuse_attn_mask",
             "attn_mask = torch.index_select(self.attn_mask_cache,"))


def test_the_logger_tag_alone_is_peeled():
    """vLLM's logger writes "[file.py:N]" after the level and time (vllm/logger.py _FORMAT); a writer who kept
    only the tag leaves it on every line: peeled like the whole stamp, the traceback and its exception line
    are read."""
    assert_in_wheel("0.34.0", "vllm/logger.py", '"[%(fileinfo)s:%(lineno)d] %(message)s"')
    tagged = vllm_traceback(*_PROPOSE, exc="IndexError: index out of range in self", head="[core.py:720] ")
    assert reads(tagged, "vllm")[:2] == (True, "spec_feature_conflict")


def test_the_drafters_chunked_prefill_mask_is_spec_feature_conflict():
    """w2920: the engine core's fatal error while serving, run_busy_loop -> execute_model ->
    propose_draft_token_ids -> eagle_proposer._propose -> get_splitfuse_attn_mask, "IndexError: index out of
    range in self", each line under "[core.py:720]" alone; read unknown before (the exception line unread)."""
    assert reads(read_log("w2920.log")) == (True, "spec_feature_conflict", "serving")
    assert vllm_signature(read_log("w2920.log")) == "vllm_ascend_draft_splitfuse_mask"
    stamped = vllm_traceback(*_PROPOSE, exc="RuntimeError: index out of range in self")
    assert reads(stamped, "vllm")[:2] == (True, "spec_feature_conflict")


def test_the_targets_own_chunked_prefill_mask_is_not_the_drafters():
    """The same mask builder failing under the target model's attention (no proposer frame) is not it."""
    target = vllm_traceback(("vllm_ascend/worker/model_runner_v1.py", 900, "_make_attention_mask",
                             "return self.attn_mask_builder.get_splitfuse_attn_mask("), _PROPOSE[1],
                            exc="IndexError: index out of range in self")
    assert vllm_signature(target) != "vllm_ascend_draft_splitfuse_mask"


# --- w2910: a decode batch padded to a FULL ACL graph's request count --------------------------------------

_PREPARE = ("vllm_ascend/worker/model_runner_v1.py", 1910, "_prepare_inputs",
            "self.query_start_loc[num_reqs + 1:num_reqs_padded +")
_EXPAND = "RuntimeError: The expanded size of the tensor (3) must match the existing size (7)"


def test_the_full_graph_padding_is_cuda_graph_replay():
    """w2910: one worker's busy-loop traceback, execute_model -> _prepare_inputs failing at the line that
    fills the padded requests' query_start_loc ("The expanded size of the tensor (11) must match the
    existing size (879)"); read unknown before. The line runs only when a uniform decode batch is padded for
    a FULL decode graph (vllm-ascend 0.12.0rc1 model_runner_v1.py:1021); its .gpu form reads the same."""
    assert reads(read_log("w2910.log")) == (True, "cuda_graph_replay", "serving")
    assert vllm_signature(read_log("w2910.log")) == "vllm_ascend_full_graph_padding"
    gpu = vllm_traceback((*_PREPARE[:3], "self.query_start_loc.gpu[num_reqs + 1:num_reqs_padded +"),
                         exc=_EXPAND)
    assert reads(gpu, "vllm")[:2] == (True, "cuda_graph_replay")


def test_another_line_of_prepare_inputs_is_not_the_padding():
    """The same shape error on another line of _prepare_inputs (the unpadded offsets) is not the graph's."""
    other = vllm_traceback((*_PREPARE[:3], "self.query_start_loc_np[1:num_reqs + 1] = cu_num_tokens"),
                           exc=_EXPAND)
    assert vllm_signature(other) != "vllm_ascend_full_graph_padding"
