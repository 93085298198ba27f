"""Held-out round 33 (issue 24): its misses read a second time, four fixed by general rules.

Round 33 (h33001-h33009; seven are files committed to public repositories, pinned to a commit, two are
thread excerpts, sglang#30453 and ai-dynamo/nixl#987) was measured once on main at 8542697 (with the
round's logs, 856b89a: crashed 8/9, kind 4/9, phase 6/6); docs/diagnosis.md, "Held-out round 33",
explains each miss. Fixed: torch's TCPStore ping answered by something else (h33001, ``nccl``); a LoRA
adapter lacking a tensor the loader looks up (h33004, ``weights_unreadable``); an Ascend AI core timeout,
CANN 507014 (h33008, ``cuda_illegal_access``); NIXL's agent failing to register the KV buffers (h33009,
``pd_transfer``). The positive tests fail on 8542697 (the near misses hold on both). A text cited from a
wheel is checked there where the wheel is unpacked (skipped elsewhere).
"""

from __future__ import annotations

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import (REAL_MANIFEST, assert_at_line, assert_in_library_wheel, assert_in_sglang_wheel,
                      assert_reads_as_labelled, real, reading)

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 33}


def test_round33_is_folded_into_work_with_its_one_dispute():
    assert sorted(_ROUND) == [f"h3300{i}" for i in range(1, 10)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert [log_id for log_id, log in _ROUND.items() if log.get("kind_disputed")] == ["h33007"]
    assert _ROUND["h33007"]["kind_disputed"] == ["cuda_oom", "cuda_graph_capture"]
    assert not any(log.get("phase_disputed") for log in _ROUND.values())


def test_the_rounds_misses_read_as_labelled_or_as_the_second_look():
    assert_reads_as_labelled("h33001", "store_ping_nonce")
    assert_reads_as_labelled("h33004", "lora_adapter_tensor_missing")
    assert_reads_as_labelled("h33008", "npu_aicore_timeout")
    assert_reads_as_labelled("h33009", "pd_transfer_setup")
    # an OOM inside the capture wrapper stays a capture failure (a009, h10035): the second look's reading
    found = real("h33007")
    assert reading(found) == (True, "cuda_graph_capture", "graph_capture")
    assert found.signature == "capture_failed"

_HEAD = "[2025-11-20 01:13:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"


def _traceback(frames: str, exc: str) -> str:
    return (_HEAD + '  File "/x/sglang/srt/managers/scheduler.py", line 2534, in run_scheduler_process\n'
            "    scheduler = Scheduler(\n" + frames + exc + "\n")


# --- torch's TCPStore ping answered by something that is not the store (h33001) -------------------------

_STORE = ('  File "/x/torch/distributed/rendezvous.py", line 198, in _create_c10d_store\n'
          "    return TCPStore(\n")
_NONCE = ('RuntimeError: nonce == returnedNonce INTERNAL ASSERT FAILED at "/pytorch/torch/csrc/distributed/'
          'c10d/TCPStore.cpp":418, please report a bug to PyTorch. Ping failed, invalid nonce returned')


def test_a_store_ping_answered_by_another_listener_is_a_rendezvous_failure():
    found = diagnose(_traceback(_STORE, _NONCE))
    assert (reading(found), found.signature) == ((True, "nccl", "launch"), "store_ping_nonce")
    assert "`--dist-init-addr`" in found.suggestion


def test_another_internal_assert_in_the_store_is_not_the_ping():
    found = diagnose(_traceback(_STORE, _NONCE.replace("Ping failed, invalid nonce returned",
                                                       "Stop_waiting response is expected")))
    assert found.signature != "store_ping_nonce"


# --- a LoRA adapter without a tensor the loader looks up (h33004) ---------------------------------------

_LORA = ('  File "/x/sglang/srt/lora/lora_manager.py", line 410, in init_lora_adapters\n'
         "    raise RuntimeError(\n")


def test_a_lora_adapter_missing_a_tensor_is_weights_unreadable():
    found = diagnose(_traceback(_LORA, "RuntimeError: Failed to load LoRA adapter my-lora-adapter: "
                                       "'base_model.model.model.layers.0.self_attn.v_proj.lora_A.weight'"))
    assert (found.crashed, found.kind, found.signature) == (True, "weights_unreadable",
                                                           "lora_adapter_tensor_missing")
    assert "v_proj" in found.suggestion


def test_a_lora_adapter_refused_for_another_reason_is_not_a_missing_tensor():
    # the same wrapper around another error (0.5.23 lora/lora_manager.py:358, an adapter loaded twice)
    for exc in ("RuntimeError: Failed to load LoRA adapter a: the adapter is already loaded",
                "RuntimeError: Failed to load LoRA adapter a: CUDA out of memory"):
        assert diagnose(_traceback(_LORA, exc)).signature != "lora_adapter_tensor_missing", exc


def test_the_lora_manager_wraps_the_loaders_error():
    assert_in_sglang_wheel("0.5.23", "sglang/srt/lora/lora_manager.py",
                           'f"Failed to load LoRA adapter {lora_ref.lora_name}: {result.error_message}"')
    assert_at_line("sglang", "0.5.13", "sglang/srt/lora/lora_manager.py", 489,
                   'f"Failed to load LoRA adapter {lora_ref.lora_name}: {result.error_message}"')
    assert_at_line("sglang", "0.4.10.post2", "sglang/srt/lora/lora_manager.py", 378,
                   'f"Failed to load LoRA adapter {lora_ref.lora_name}: {result.error_message}"')
    assert_at_line("sglang", "0.5.23", "sglang/srt/lora/lora.py", 286,
                   'v_name = weight_name.replace("q_proj", "v_proj")')


# --- an Ascend AI core timeout, CANN 507014 (h33008) ----------------------------------------------------

_AICORE = ("[163686] [2026-07-07 07:20:43:938] torch.distributed: [ERROR] [164517] Find exception when "
           "finishedNPUExecutionInternal, query:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:61 NPU "
           "function error: acl::AclQueryEventRecordedStatus(event_, &currStatus), error code is 507014\n"
           "[ERROR] 2026-07-07-07:20:43 (PID:163686, Device:1, RankID:-1) ERR00100 PTA call acl api failed\n"
           "[Error]: The aicore execution times out.\n"
           "        Rectify the fault based on the error information in the ascend log.\n"
           "[rank1]:[E707 07:20:43.220330280 compiler_depend.ts:1693] [Rank 1] HCCL watchdog thread "
           "terminated with exception:\n")


def test_an_aicore_timeout_is_the_npus_kernel_fault():
    found = diagnose(_AICORE)
    assert (reading(found), found.signature) == ((True, "cuda_illegal_access", "serving"),
                                                 "npu_aicore_timeout")
    assert "ASCEND_LAUNCH_BLOCKING=1" in found.suggestion


def test_another_npu_error_code_is_not_the_timeout():
    # 507011 (a model's stream task failed) is no AI core timeout
    found = diagnose(_AICORE.replace("507014", "507011").replace("The aicore execution times out.",
                                                                 "The model execution failed."))
    assert found.signature != "npu_aicore_timeout"


def test_the_timeouts_texts_are_torch_npus():
    include = "torch_npu/include/"
    assert_in_library_wheel("torch_npu", "2.5.1", include + "torch_npu/csrc/core/npu/NPUErrorCodes.h",
                            '{507014, "The aicore execution times out.')
    assert_at_line("torch_npu", "2.5.1", include + "third_party/acl/inc/acl/error_codes/rt_error_codes.h",
                   73, "ACL_ERROR_RT_AICORE_TIMEOUT             = 507014")


# --- NIXL's agent failing to register the KV buffers (h33009) -------------------------------------------

_NIXL = ("E0000 00:00:1762238119.118504 2368741 gpunetio_backend.cpp:1105] Can't register memory for unknown "
         "device 3\n"
         "E1104 06:35:19.118512 2368741 nixl_agent.cpp:473] registerMem: registration failed for the "
         "specified or all potential backends\n"
         "[2025-11-04 06:35:19 TP3] Scheduler hit an exception: Traceback (most recent call last):\n")


def test_nixl_failing_to_register_the_kv_buffers_is_a_pd_setup_failure():
    found = diagnose(_NIXL)
    assert (reading(found), found.signature) == ((True, "pd_transfer", "memory_pool"), "pd_transfer_setup")


def test_nixls_deregistration_is_not_the_registration():
    found = diagnose(_NIXL.replace("registerMem: registration failed",
                                   "deregisterMem: deregistration failed"))
    assert found.signature != "pd_transfer_setup"
