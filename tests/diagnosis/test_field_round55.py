"""Held-out round 55 (issue 24): aiter's op check that refuses its inputs and aborts the process.

Round 55 (h55001-h55011; excerpts of issue threads and pull requests) was measured once on main at 19c88ec (with
the round's logs, 0b348c5: crashed 11/11, kind 10/11, phase 5/5); docs/diagnosis.md, "Held-out round 55", explains
its one miss. h55011 is two lines: aiter's "[AITER] .../csrc/py_itfs_cu/asm_mla.cu:227 mla_decode_stage1_asm_fwd:
fp8 Q requires q_scale and kv_scale", then "Fatal Python error: Aborted". aiter's op interfaces check what they are
handed with AITER_CHECK, whose check_fail writes "[AITER] FILE:LINE message" to stderr and aborts, or throws where
the ctypes binding asked it to, which raises the text as "RuntimeError: {op} failed: ..." (ROCm/aiter b0fd63cd9d
csrc/include/aiter_hip_common.h:43-63, :66-71; csrc/py_itfs_cu/asm_mla.cu:226-227; aiter/jit/core.py:1401): the
op refusing this configuration, not a native crash nobody explains. The same prefix on a HIP call's failure
("fail to call ... ---> [HIP error]") and the checks in aiter's headers (a code object, AITER_ASM_DIR) are not
this. A rule's test reads the corpus log, a text written from the same source in another form and near misses
that must not read the same way; the positive tests fail on 0b348c5. A text cited from aiter's source is checked
there where it is unpacked (/work/wheels/aiter-b0fd63cd9d, as round 48's aiter-cf12b13; skipped elsewhere).
"""

from __future__ import annotations

from fieldkit import REAL_MANIFEST, assert_at_line, disputed, folded_round, real, reading, reads, said

_ABORT = "Fatal Python error: Aborted\n"
_ITFS = "/sgl-workspace/aiter/csrc/py_itfs_cu/asm_mla.cu"
_AITER = "b0fd63cd9d"  # ROCm/aiter, June 2026: asm_mla.cu's check at :227, as the round's log prints it


def test_round55_is_folded_into_work_with_nothing_disputed():
    ids = folded_round(REAL_MANIFEST, 55)
    assert ids == [f"h550{i:02d}" for i in range(1, 12)]
    assert disputed(REAL_MANIFEST, ids) == []


# --- h55011: aiter's op check, then the abort -----------------------------------------------------------------------

def test_aiters_op_check_before_the_abort_is_the_kernel_refusing_its_configuration():
    found = real("h55011")
    assert reading(found)[:2] == (True, "kernel_config_unsupported")
    assert found.signature == "aiter_op_check_failed"
    assert "mla_decode_stage1_asm_fwd (asm_mla.cu) refused its inputs: fp8 Q requires q_scale and kv_scale" \
        in found.suggestion


def test_another_releases_check_reads_the_same():
    # aiter e404860 (HEAD) moved the check to asm_mla.cu:818-819, and a build from a checkout has no aiter_meta
    text = f"[AITER] {_ITFS}:819 mla_decode_stage1_asm_fwd: fp8 Q requires q_scale and kv_scale\n" + _ABORT
    assert said(text)[1:] == ("kernel_config_unsupported", "aiter_op_check_failed")
    # a CK op's interface (py_itfs_ck) refusing a dtype, faulthandler's thread dump after the abort
    text = ("[AITER] /opt/aiter/csrc/py_itfs_ck/mha_fwd_kernels.cu:88 mha_fwd: unsupport Q dtype:fp8\n" + _ABORT
            + "\nCurrent thread 0x00007f2a1c5ff640 (most recent call first):\n"
            '  File "/opt/aiter/aiter/ops/mha.py", line 100 in mha_fwd\n')
    assert said(text)[1:] == ("kernel_config_unsupported", "aiter_op_check_failed")


def test_the_thrown_check_through_the_ctypes_binding_reads_the_same():
    # where the binding asked check_fail to throw, it raises the text as RuntimeError(f"{fc_name} failed: ...")
    text = ("Traceback (most recent call last):\n"
            '  File "/sgl-workspace/aiter/aiter/jit/core.py", line 1401, in wrapper\n'
            '    raise RuntimeError(f"{fc_name} failed: {err_msg}")\n'
            f"RuntimeError: mla_decode_stage1_asm_fwd failed: [AITER] {_ITFS}:227 mla_decode_stage1_asm_fwd: "
            "fp8 Q requires q_scale and kv_scale\n")
    assert said(text)[1:] == ("kernel_config_unsupported", "aiter_op_check_failed")


def test_a_hip_calls_failure_or_a_header_check_is_not_this():
    # HIP_CALL's failure has the same prefix (aiter_check_fatal): a fault, not a refusal
    for text in ("[AITER] custom_all_reduce.cuh:3412 fail to call hipIpcOpenMemHandle(...)\n" + _ABORT,
                 f"[AITER] {_ITFS}:300 fail to call hipModuleLaunchKernel(...) ---> [HIP error](an illegal "
                 "memory access was encountered)\n" + _ABORT,
                 # a check in aiter's own header: the install's, not the op's inputs
                 "[AITER] /sgl-workspace/aiter/csrc/include/aiter_hip_common.h:367 AITER_ASM_DIR not set\n" + _ABORT):
        assert reads(text)[1] != "kernel_config_unsupported", text


def test_aiters_check_writes_the_line_then_aborts_or_throws():
    mla, common = "csrc/py_itfs_cu/asm_mla.cu", "csrc/include/aiter_hip_common.h"
    assert_at_line("aiter", _AITER, mla, 226, "AITER_CHECK(q_scale != nullptr && kv_scale != nullptr,")
    assert_at_line("aiter", _AITER, mla, 227, '__func__, ": fp8 Q requires q_scale and kv_scale");')
    assert_at_line("aiter", _AITER, common, 46, 'oss << "[AITER] " << file << ":" << line;')
    assert_at_line("aiter", _AITER, common, 60, "throw std::runtime_error(std::move(msg));")
    assert_at_line("aiter", _AITER, common, 62, "std::abort();")
    assert_at_line("aiter", _AITER, common, 71, "aiter_detail::check_fail(__FILE__, __LINE__")
    # HIP_CALL's failure writes the same prefix through aiter_check_fatal
    assert_at_line("aiter", _AITER, common, 37, 'std::cerr << "[AITER] " << file << ":" << line << " ";')
    assert_at_line("aiter", _AITER, "aiter/jit/core.py", 1401, 'raise RuntimeError(f"{fc_name} failed: {err_msg}")')


def test_the_docs_line_for_sglangs_caller_is_the_releases():
    # docs/diagnosis.md, "Noticed and left alone": 0.5.13's DSA backend calls aiter's MLA decode with no q_scale or
    # kv_scale (its keyword arguments end at logit_cap)
    dsa = "sglang/srt/layers/attention/dsa_backend.py"
    assert_at_line("sglang", "0.5.13", dsa, 2016, "mla_decode_fwd(")
    assert_at_line("sglang", "0.5.13", dsa, 2026, "logit_cap=layer.logit_cap,")
    # and its ServerArgs lets a DSA model keep an fp8_e4m3 KV cache (no setting refused: not bad_argument)
    assert_at_line("sglang", "0.5.13", "sglang/srt/server_args.py", 1751, "assert self.kv_cache_dtype in [")
    assert_at_line("sglang", "0.5.13", "sglang/srt/server_args.py", 1754,
                   '"DeepSeek DSA only supports bf16/bfloat16 or fp8_e4m3 kv_cache_dtype"')
