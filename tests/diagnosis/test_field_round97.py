"""Held-out round 97 (issue 24): aiter's MoE dispatch with no kernel for the configuration, nest_asyncio meeting
SGLang's uvloop, and vLLM's weight_loader shape assert under SGLang 0.1.x.

Round 97 (h97001-h97015; eleven SGLang issue threads, four server logs of michael-amd/sglang-ci's ROCm runs) was
measured once on main at 32e28a8 (kind 7/15), staged again as 01b9fcc7 on b16fb9e, where round 96's rule reads h97004
(kind 8/15): crashed 15/15, phase 11/14. docs/diagnosis.md, "Held-out round 97", tells the round.

- h97014, a PD prefill server of 0.5.5.post2 on MI35x: aiter's "RuntimeError: Unsupported kernel config for moe
  heuristic dispatch" (ROCm/aiter csrc/ck_gemm_moe_2stages_codegen/gen_instances.py:66-70) under SGLang's
  quark_moe.py:210: kernel_config_unsupported (device_crashes/moe_dispatch.py aiter_moe_dispatch_unsupported; read
  health_check before, from the warmup's later 503s).
- h97006, SGLang 0.1.x: nest_asyncio's "ValueError: Can't patch loop of type <class 'uvloop.Loop'>" (nest_asyncio
  1.5.6 nest_asyncio.py:175) when the server's uvicorn starts on uvloop (0.1.6 srt/server.py:50, :364):
  dependency_mismatch at ready (crashes/kinds/event_loops.py nest_asyncio_uvloop; read unknown at memory_pool).
- h97008, SGLang 0.1.11's llava loading an AWQ checkpoint: vLLM's bare "assert param_data.shape ==
  loaded_weight.shape" (vllm 0.2.7 model_executor/layers/linear.py:437) the last frame of an AssertionError:
  weights_unreadable (crashes/kinds/weights.py vllm_layer_shape; read unknown).
- Disputed: h97001's kind (arch_unsupported -> unknown: 0.4.4.post1 supports Janus-Pro but sets its architectures
  only for the hub id, hf_transformers_utils.py:77-82), h97002's (weights_unreadable -> unknown: 0.4.4.post3's
  modelopt path hands a 0-dim scale to convert_to_channelwise, modelopt_quant.py:169, utils.py:91, :101).
- Left (known_misses.json): h97007's and h97011's phase (serving, read ready: 0.1.x's "new fill batch" after uvicorn
  came up, no warmup in 0.1.6-0.1.13), h97009's kind (sglang.__file__ None), h97015's (a scheduler's AttributeError
  in SGLang's own deepseek_v2, read health_check from the 503s after it).

The positive tests fail on 01b9fcc7.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, VLLM_WHEELS, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 97)


def test_round97_is_folded_into_work_with_two_disputes_and_four_left():
    assert _IDS == [f"h970{n:02d}" for n in range(1, 16)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h97001", "h97002"]
    assert REAL_MANIFEST["h97001"]["kind_disputed"] == ["arch_unsupported", "unknown"]
    assert REAL_MANIFEST["h97002"]["kind_disputed"] == ["weights_unreadable", "unknown"]
    assert {i: KNOWN_MISSES["real"][i] for i in _IDS if i in KNOWN_MISSES["real"]} == {
        "h97007": ["phase"], "h97009": ["kind"], "h97011": ["phase"]}  # h97015: read as labelled from round 98 on


@pytest.mark.parametrize(("log_id", "want"), [
    ("h97014", ("kernel_config_unsupported", "ready", "aiter_moe_dispatch_unsupported")),
    ("h97006", ("dependency_mismatch", "ready", "nest_asyncio_uvloop")),
    ("h97008", ("weights_unreadable", "load_weights", "vllm_layer_shape")),
])
def test_the_rounds_fixed_misses_read_as_labelled(log_id, want):
    found = real(log_id)
    assert (found.crashed, found.kind, found.phase, found.signature) == (True, *want)
    assert found.suggestion


@pytest.mark.parametrize("log_id", ["h97001", "h97002"])
def test_the_disputed_logs_keep_their_reading(log_id):
    found = real(log_id)
    assert (found.crashed, found.kind) == (True, "unknown")


# --- h97014: aiter's MoE dispatch with no kernel for this configuration ------------------------------------------

_STAMP = "[2025-11-13 16:17:31 TP0] "
_AITER = [
    f"{_STAMP}Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/quark/quark_moe.py", line 210, in apply',
    "    output = fused_moe(",
    '  File "/sgl-workspace/aiter/aiter/ops/moe_op.py", line 492, in ck_moe_stage1_fwd',
    "    ck_moe_stage1(",
    '  File "/sgl-workspace/aiter/aiter/jit/core.py", line 899, in wrapper',
    "    return op(*args, **kwargs)",
]


@pytest.mark.parametrize("exc", [
    "RuntimeError: Unsupported kernel config for moe heuristic dispatch",
    "RuntimeError: Unsupported block_m value for moe heuristic dispatch: 512",
], ids=["kernel-config", "block-m"])
def test_aiters_moe_dispatch_refusal_is_kernel_config_unsupported(exc):
    text = "\n".join(_AITER + [exc, "", "[2025-11-13 16:17:31] SIGQUIT received. signum=None, frame=None."]) + "\n"
    assert reads(text, family="sglang")[:2] == (True, "kernel_config_unsupported")


# near miss: another "Unsupported ..." of the same frames is not the MoE table's refusal
def test_another_unsupported_text_is_not_the_moe_dispatch():
    from ddlab.diagnosis.diagnosis import diagnose
    text = "\n".join(_AITER + ["RuntimeError: Unsupported quant type for moe sorting"]) + "\n"
    assert diagnose(text).signature != "aiter_moe_dispatch_unsupported"


# --- h97006: nest_asyncio meeting SGLang's uvloop ------------------------------------------------------------------

_LOOP = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.10/threading.py", line 953, in run',
    "    self._target(*self._args, **self._kwargs)",
    '  File "/home/u/.local/lib/python3.10/site-packages/sglang/srt/server.py", line 468, in _launch_server',
    "    uvicorn.run(",
    '  File "/home/u/.local/lib/python3.10/site-packages/nest_asyncio.py", line 175, in _patch_loop',
    "    raise ValueError('Can\\'t patch loop of type %s' % type(loop))",
]


def test_nest_asyncio_refusing_uvloop_is_dependency_mismatch():
    text = "\n".join(_LOOP + ["ValueError: Can't patch loop of type <class 'uvloop.Loop'>"]) + "\n"
    assert reads(text, family="sglang")[:2] == (True, "dependency_mismatch")


# near miss: the patcher refusing another loop (a GUI's) is not SGLang's uvloop
def test_nest_asyncio_refusing_another_loop_is_not_the_uvloop_rule():
    from ddlab.diagnosis.diagnosis import diagnose
    text = "\n".join(_LOOP + ["ValueError: Can't patch loop of type <class 'qasync.QSelectorEventLoop'>"]) + "\n"
    assert diagnose(text).signature != "nest_asyncio_uvloop"


# --- h97008: vLLM's weight_loader shape assert under SGLang 0.1.x ---------------------------------------------------

_SGL = "/opt/conda/lib/python3.10/site-packages"
_LOADER = [
    "router init state: Traceback (most recent call last):",
    f'  File "{_SGL}/sglang/srt/managers/router/model_runner.py", line 293, in load_model',
    "    model.load_weights(",
    f'  File "{_SGL}/sglang/srt/models/llama2.py", line 310, in load_weights',
    "    weight_loader(param, loaded_weight, shard_id)",
]
_VLLM_ASSERT = [f'  File "{_SGL}/vllm/model_executor/layers/linear.py", line 437, in weight_loader',
                "    assert param_data.shape == loaded_weight.shape"]


def test_vllms_weight_loader_shape_assert_is_weights_unreadable():
    text = "\n".join(_LOADER + _VLLM_ASSERT + ["AssertionError"]) + "\n"
    assert reads(text, family="sglang")[:2] == (True, "weights_unreadable")


# near misses: another assertion in vLLM's weight_loader, or the shape assert with a later frame below it
@pytest.mark.parametrize("frames", [
    [_VLLM_ASSERT[0], "    assert loaded_shard_id < len(self.output_sizes)"],
    _VLLM_ASSERT + [f'  File "{_SGL}/torch/_tensor.py", line 40, in wrapped', "    return f(*args)"],
], ids=["another-assert", "later-frame"])
def test_another_assertion_is_not_the_shape_assert(frames):
    from ddlab.diagnosis.diagnosis import diagnose
    assert diagnose("\n".join(_LOADER + frames + ["AssertionError"]) + "\n").signature != "vllm_layer_shape"


# --- the texts cited from wheels ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.5.5.post2", "sglang/srt/layers/quantization/quark/quark_moe.py", 210, "output = fused_moe("),
    ("nest_asyncio", "1.5.6", "nest_asyncio.py", 175, "raise ValueError('Can\\'t patch loop of type %s' % type(loop))"),
    ("nest_asyncio", "1.5.6", "nest_asyncio.py", 31, "_patch_loop(loop)"),
    ("sglang", "0.1.6", "sglang/srt/server.py", 50, "asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())"),
    ("sglang", "0.1.6", "sglang/srt/server.py", 364, 'loop="uvloop",'),
    ("sglang", "0.1.11", "sglang/srt/models/llama2.py", 310, "weight_loader(param, loaded_weight, shard_id)"),
    ("sglang", "0.1.11", "sglang/srt/managers/router/model_runner.py", 285,
     'logger.info(f"quant_config: {quant_config}")'),
    ("sglang", "0.1.11", "sglang/srt/models/llava.py", 292, "self.language_model.load_weights("),
    ("sglang", "0.4.4.post1", "sglang/srt/configs/model_config.py", 326, "class_name = config.architectures[0]"),
    ("sglang", "0.4.4.post1", "sglang/srt/hf_transformers_utils.py", 78,
     'if isinstance(model, str) and model.lower().startswith("deepseek-ai/janus-pro"):'),
    ("sglang", "0.4.4.post1", "sglang/srt/hf_transformers_utils.py", 82,
     'setattr(config, "architectures", ["MultiModalityCausalLM"])'),
    ("sglang", "0.4.4.post1", "sglang/srt/models/deepseek_janus_pro.py", 2127, "EntryClass = [MultiModalityCausalLM]"),
    ("sglang", "0.4.4.post3", "sglang/srt/layers/quantization/modelopt_quant.py", 169,
     "max_w_scale = convert_to_channelwise(max_w_scale, layer.logical_widths)"),
    ("sglang", "0.4.4.post3", "sglang/srt/layers/quantization/utils.py", 91,
     "weight_scale_channel[start:end, :] = weight_scale[idx]"),
    ("sglang", "0.4.4.post3", "sglang/srt/layers/quantization/utils.py", 101, "max_w_scale = weight_scale.max()"),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)


@pytest.mark.parametrize("line", [204, 312, 437, 528])
def test_vllms_sharded_weight_loaders_assert_the_shape(line):
    source = VLLM_WHEELS / "0.2.7" / "vllm/model_executor/layers/linear.py"
    if not source.exists():
        pytest.skip(f"{source} not unpacked here")
    assert source.read_text().splitlines()[line - 1].strip() == "assert param_data.shape == loaded_weight.shape"
