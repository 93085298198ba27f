"""Held-out round 48 (issue 24): its one miss, h48004's kind, read by a rule from aiter's source and disputed.

Round 48 (h48001-h48005; excerpts of issue and pull-request threads) was measured once on main at 06e9fac
(with the round's logs, c0b2513: crashed 5/5, kind 4/5, phase 3/3); docs/diagnosis.md, "Held-out round 48",
explains the miss. h48004 is a scheduler's 'ValueError: Invalid FlyDSL kernel name: flydsl_moe1_...' from
AMD's aiter. aiter's fused MoE runs a FlyDSL kernel only by a name one of its tuned configs gives it
(ROCm/aiter cf12b13 aiter/fused_moe.py:916; none without a row, :864-866, :955), and raises that error where
the installed aiter's FlyDSL table lacks the name (:646-648): a tuned config and a kernel table of different
aiter commits, not a kernel refusing the model's shapes. ddlab reads it dependency_mismatch
(aiter_tuned_kernel_missing); the label's kernel_config_unsupported is disputed. A text cited from a source
is checked there where it is unpacked (/work/wheels/aiter-cf12b13 holds the three aiter files read at that
commit; skipped elsewhere).
"""

from __future__ import annotations

from fieldkit import REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, reading, real, said

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 48}

_AITER = "cf12b13"
_FUSED_MOE = "aiter/fused_moe.py"
_TABLE = "aiter/ops/flydsl/moe_kernels.py"
_SITE = "/usr/local/lib/python3.10/dist-packages/"
_STAMP = "[2026-04-16 23:48:59 TP1] "


def test_round48_is_folded_into_work_with_one_kind_disputed():
    assert sorted(_ROUND) == [f"h4800{i}" for i in range(1, 6)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert not any(log.get("phase_disputed") for log in _ROUND.values())
    disputed = {log_id: log["kind_disputed"] for log_id, log in _ROUND.items() if log.get("kind_disputed")}
    assert disputed == {"h48004": ["kernel_config_unsupported", "dependency_mismatch"]}
    assert "aiter/fused_moe.py:916" in _ROUND["h48004"]["second_look"]


def test_the_disputed_kind_reads_as_the_second_look():
    found = real("h48004")
    assert reading(found)[:2] == (True, "dependency_mismatch")
    assert found.signature == "aiter_tuned_kernel_missing"


def test_the_rest_of_the_round_reads_as_labelled():
    assert_reads_as_labelled("h48001", None)
    assert_reads_as_labelled("h48002", None)
    assert_reads_as_labelled("h48003", "startup_signal_dump")
    assert_reads_as_labelled("h48005", None)


# --- the same error in another form: the whole traceback, written from SGLang's call and aiter's source -------

def _traceback(exc: str) -> str:
    quark = _SITE + "sglang/srt/layers/quantization/quark/schemes/quark_w4a4_mxfp4_moe.py"
    aiter = _SITE + _FUSED_MOE
    return (
        f"{_STAMP}Scheduler hit an exception: Traceback (most recent call last):\n"
        f'  File "{quark}", line 200, in apply_weights\n    output = fused_moe(\n'
        f'  File "{aiter}", line 147, in fused_moe\n    return fused_moe_(\n'
        f'  File "{aiter}", line 337, in fused_moe_\n    return fused_moe_2stages(\n'
        f'  File "{aiter}", line 1263, in fused_moe_2stages\n    a2 = metadata.stage1(\n'
        f'  File "{aiter}", line 648, in _flydsl_stage1_wrapper\n'
        '    raise ValueError(f"Invalid FlyDSL kernel name: {kernelName}")\n'
        f"{exc}\n"
    )


def test_a_stage2_name_in_the_whole_traceback_reads_the_same():
    text = _traceback("ValueError: Invalid FlyDSL kernel name: flydsl_moe2_afp4_wfp4_bf16_t128x256x256_reduce")
    assert said(text) == (True, "dependency_mismatch", "aiter_tuned_kernel_missing")


def test_an_empty_name_is_not_a_tuned_configs_kernel():
    # no tuned row leaves the name "" and the dispatch never calls the wrapper (fused_moe.py:866, :955): an
    # empty name is a caller outside that dispatch, not a config the installed aiter does not match
    assert said(_traceback("ValueError: Invalid FlyDSL kernel name: "))[1] != "dependency_mismatch"


def test_a_kernel_refusing_a_shape_keeps_its_kind():
    refused = _traceback("ValueError: Invalid FlyDSL kernel name: flydsl_moe1_x").replace(
        "ValueError: Invalid FlyDSL kernel name: flydsl_moe1_x",
        "RuntimeError: Invalid configuration : NUM_MMA_Q=1 NUM_MMA_D_QK=32 NUM_MMA_D_VO=32 NUM_MMA_KV=1 "
        "NUM_WARPS_Q=1 NUM_WARPS_KV=4 please create an issue (https://github.com/flashinfer-ai/flashinfer/issues) "
        "and report the issue to the developers.")
    assert said(refused)[1] == "kernel_config_unsupported"


# --- the source lines the rule and the second look cite --------------------------------------------------------

def test_the_wrapper_raises_for_a_name_its_table_lacks():
    assert_at_line("aiter", _AITER, _FUSED_MOE, 646,
                   "parsed = aiter.ops.flydsl.moe_kernels.get_flydsl_kernel_params(kernelName)")
    assert_at_line("aiter", _AITER, _FUSED_MOE, 648, 'raise ValueError(f"Invalid FlyDSL kernel name: {kernelName}")')
    assert_at_line("aiter", _AITER, _FUSED_MOE, 699, 'raise ValueError(f"Invalid FlyDSL kernel name: {kernelName}")')
    assert_at_line("aiter", _AITER, _TABLE, 39, "def get_flydsl_kernel_params(name: str) -> Optional[Dict]:")


def test_the_name_comes_only_from_a_tuned_config():
    assert_at_line("aiter", _AITER, _FUSED_MOE, 147, "return fused_moe_(")
    assert_at_line("aiter", _AITER, _FUSED_MOE, 337, "return fused_moe_2stages(")
    assert_at_line("aiter", _AITER, _FUSED_MOE, 1263, "a2 = metadata.stage1(")
    assert_at_line("aiter", _AITER, _FUSED_MOE, 864,
                   'if cfg is None or int(os.environ.get("AITER_BYPASS_TUNE_CONFIG", "0")):')
    assert_at_line("aiter", _AITER, _FUSED_MOE, 866, 'kernelName1 = ""')
    assert_at_line("aiter", _AITER, _FUSED_MOE, 916, 'kernelName1 = cfg["kernelName1"]')
    assert_at_line("aiter", _AITER, _FUSED_MOE, 955,
                   'is_flydsl1 = bool(kernelName1) and kernelName1.startswith("flydsl_")')


def test_the_shipped_config_names_a_stage1_tile_the_table_dropped():
    assert_at_line("aiter", _AITER, _TABLE, 71, "tile_ms = [32, 64, 128]")
    assert_at_line("aiter", _AITER, "aiter/configs/model_configs/dsv3_fp4_tuned_fmoe.csv", 3,
                   "flydsl_moe1_afp4_wfp4_bf16_t16x128x256_w3_kb7_bnt0_go_fp4")


def test_sglang_calls_aiters_fused_moe_for_mxfp4():
    schemes = "sglang/srt/layers/quantization/quark/schemes/quark_w4a4_mxfp4_moe.py"
    assert_at_line("sglang", "0.5.10", schemes, 35, "from aiter.fused_moe import fused_moe")
    assert_at_line("sglang", "0.5.10", schemes, 200, "output = fused_moe(")
    assert_at_line("sglang", "0.5.10", schemes, 206, "quant_type=QuantType.per_1x32,")
