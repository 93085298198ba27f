"""Held-out round 98 (issue 24): FastAPI's python-multipart check at the server's import, the model config's
--quantization check, aiter's JIT build directory refused at import, a /health 503 beside a scheduler's unexplained
exception, and a PD decode queue's aborts as the scheduler loop's lines.

Round 98 (h98001-h98012; seven whole server logs of michael-amd/sglang-ci's ROCm PD runs and user files, five SGLang
issue threads) was measured once on main at b16fb9e, staged again as 86745ab7 on 46acea0 (round 97 merged), where it
reads the same: crashed 10/12, kind 7/12, phase 10/11. docs/diagnosis.md, "Held-out round 98", tells the round.

- h98007, 0.2.9 image: FastAPI's 'RuntimeError: Form data requires "python-multipart" to be installed.' (fastapi
  0.112.0 dependencies/utils.py:67-71, :100) while sglang.srt.server builds its /v1/files form route (0.2.9
  srt/server.py:161-162): dependency_mismatch at launch (crashes/kinds/web_deps.py form_multipart_missing; read not
  crashed, request_error, from FastAPI's frames).
- h98008, 0.3.4: vLLM's ModelConfig refusing --quantization awq_marlin against an AWQ checkpoint (vllm 0.5.5
  config.py:296-300): bad_argument (crashes/kinds/quant_args.py quant_arg_mismatch; read unknown).
- h98006, a v0.4.3.post2-rocm630 image run as another user: aiter copying CK into its own jit/build at import
  (ROCm/aiter 5f6518ac16 aiter/jit/core.py:51-53), [Errno 13] Permission denied: dependency_mismatch
  (device_crashes/jit_dirs.py aiter_jit_dir_denied; read unknown).
- h98001 (and round 97's h97015), 0.5.5.post3 PD decode: a scheduler's AttributeError in SGLang's own deepseek_v2
  during the PD warmup, /health 503s beside it: unknown, as labelled (diagnosis/consequences.py: the 503 yields to
  the unexplained exception; read health_check).
- h98005, 0.5.5.post3 PD decode that serves on: the decode queue's "Decode transfer failed for request" aborts come
  from the scheduler's loop (disaggregation/decode.py:736), so the silence after the last batch line is no hang
  (diagnosis/stalls.py; read crashed hang). Its kind disputed (None -> request_error: 14 requests answered 500).
- None left.

The positive tests fail on 86745ab7.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 98)


def test_round98_is_folded_into_work_with_one_dispute_and_none_left():
    assert _IDS == [f"h980{n:02d}" for n in range(1, 13)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h98005"]
    assert REAL_MANIFEST["h98005"]["kind_disputed"] == [None, "request_error"]
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert "h97015" not in KNOWN_MISSES["real"]


@pytest.mark.parametrize(("log_id", "want"), [
    ("h98007", (True, "dependency_mismatch", "launch", "form_multipart_missing")),
    ("h98008", (True, "bad_argument", "load_weights", "quant_arg_mismatch")),
    ("h98006", (True, "dependency_mismatch", "launch", "aiter_jit_dir_denied")),
    ("h98001", (True, "unknown", "ready", None)),
    ("h97015", (True, "unknown", "ready", None)),
])
def test_the_rounds_fixed_misses_read_as_labelled(log_id, want):
    found = real(log_id)
    assert (found.crashed, found.kind, found.phase, found.signature) == want
    assert found.suggestion


def test_the_pd_decode_that_serves_on_is_not_a_hang():
    found = real("h98005")
    assert (found.crashed, found.kind) == (False, "request_error")


# --- h98007: FastAPI's python-multipart check at the server's import ---------------------------------------------

_DIST = "/usr/local/lib/python3.10/dist-packages"
_FORM = [
    "Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/launch_server.py", line 5, in <module>',
    "    from sglang.srt.server import launch_server",
    '  File "/sgl-workspace/sglang/python/sglang/srt/server.py", line 162, in <module>',
    '    async def openai_v1_files(file: UploadFile = File(...), purpose: str = Form("batch")):',
    f'  File "{_DIST}/fastapi/dependencies/utils.py", line 817, in get_body_field',
    "    check_file_field(final_field)",
    f'  File "{_DIST}/fastapi/dependencies/utils.py", line 100, in check_file_field',
    "    raise RuntimeError(multipart_not_installed_error) from None",
]


@pytest.mark.parametrize("message", [
    'RuntimeError: Form data requires "python-multipart" to be installed. ',
    'RuntimeError: Form data requires "python-multipart" to be installed. It seems you installed "multipart" '
    "instead. ",
], ids=["not-installed", "multipart-instead"])
def test_fastapis_multipart_check_is_dependency_mismatch_at_launch(message):
    text = "\n".join(_FORM + [message, 'You can install "python-multipart" with: ', "", "pip install python-multipart"])
    assert reads(text + "\n", family="sglang") == (True, "dependency_mismatch", "launch")


# near miss: a request's own RuntimeError under FastAPI's frames is still one request's error
def test_another_runtime_error_under_fastapi_is_not_the_multipart_rule():
    from ddlab.diagnosis.diagnosis import diagnose
    text = "\n".join(_FORM[:1] + _FORM[5:] + ['RuntimeError: Form data requires "email-validator" to be installed.'])
    assert diagnose(text + "\n").signature != "form_multipart_missing"


# --- h98008: --quantization against the checkpoint's own quantization config --------------------------------------

_VLLM = "/opt/conda/lib/python3.10/site-packages"
_QUANT = [
    "[2024-10-25 18:12:30 TP0] Traceback (most recent call last):",
    f'  File "{_VLLM}/sglang/srt/model_executor/model_runner.py", line 234, in load_model',
    "    self.vllm_model_config = VllmModelConfig(",
    f'  File "{_VLLM}/vllm/config.py", line 296, in _verify_quantization',
    "    raise ValueError(",
]


@pytest.mark.parametrize(("config", "arg"), [("awq", "awq_marlin"), ("gptq", "marlin"), ("fp8", "w8a8_fp8")])
def test_a_quantization_argument_the_config_refuses_is_bad_argument(config, arg):
    message = (f"ValueError: Quantization method specified in the model config ({config}) does not match the "
               f"quantization method specified in the `quantization` argument ({arg}).")
    assert reads("\n".join(_QUANT + [message]) + "\n", family="sglang")[:2] == (True, "bad_argument")


# near miss: a quantization method the release does not know is another refusal
def test_an_unknown_quantization_method_is_not_the_mismatch_rule():
    from ddlab.diagnosis.diagnosis import diagnose
    text = "\n".join(_QUANT + ["ValueError: Unknown quantization method: awq_marlinx. Must be one of ['awq']."])
    assert diagnose(text + "\n").signature != "quant_arg_mismatch"


# --- h98006: aiter's JIT build directory refused at import --------------------------------------------------------

_AITER = [
    "Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/fp8.py", line 55, in <module>',
    "    from aiter.fused_moe_bf16_asm import asm_moe",
    '  File "/sgl-workspace/aiter/aiter/jit/core.py", line 53, in <module>',
    "    shutil.copytree(CK_DIR, f'{bd_dir}/ck', dirs_exist_ok=True)",
    '  File "/usr/lib/python3.12/shutil.py", line 554, in _copytree',
    "    raise Error(errors)",
]


def _denied(path: str) -> str:
    return (f"shutil.Error: [('/sgl-workspace/aiter/3rdparty/composable_kernel/LICENSE', '{path}', "
            f"\"[Errno 13] Permission denied: '{path}'\")]")


def test_aiters_jit_directory_refused_is_dependency_mismatch():
    text = "\n".join(_AITER + [_denied("/sgl-workspace/aiter/aiter/jit/build/ck/LICENSE")]) + "\n"
    assert reads(text, family="sglang") == (True, "dependency_mismatch", "launch")


# near miss: a permission refused elsewhere (the model's cache) is not aiter's JIT workspace
def test_a_permission_refused_elsewhere_is_not_the_aiter_rule():
    from ddlab.diagnosis.diagnosis import diagnose
    text = "\n".join(_AITER + [_denied("/root/.cache/huggingface/hub/LICENSE")]) + "\n"
    assert diagnose(text).signature != "aiter_jit_dir_denied"


# --- h98001: a /health 503 beside a scheduler's unexplained exception -------------------------------------------

_WARMUP = [
    "[2025-11-20 16:20:09] INFO:     Uvicorn running on http://10.0.0.1:30026 (Press CTRL+C to quit)",
    '[2025-11-20 16:20:09] INFO:     10.0.0.1:51316 - "GET /health HTTP/1.1" 503 Service Unavailable',
    "[2025-11-20 16:20:10] Start of pd disaggregation warmup ...",
    '[2025-11-20 16:20:14] INFO:     10.0.0.1:46140 - "GET /health HTTP/1.1" 503 Service Unavailable',
]
_SCHEDULER = [
    "[2025-11-20 16:20:25 TP2] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/models/deepseek_v2.py", line 2331, in '
    "forward_absorb_fused_mla_rope_prepare",
    "    num_kv_split = forward_batch.attn_backend.num_kv_splits",
    "AttributeError: 'TritonAttnBackend' object has no attribute 'num_kv_splits'. Did you mean: 'max_kv_splits'?",
    "",
    "[2025-11-20 16:20:25] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
]


@pytest.mark.parametrize("order", ["503-before", "503-after"])
def test_a_health_503_yields_to_the_schedulers_exception(order):
    lines = _WARMUP + _SCHEDULER if order == "503-before" else _WARMUP[:1] + _SCHEDULER + _WARMUP[1:]
    assert reads("\n".join(lines) + "\n", family="sglang") == (True, "unknown", "ready")


# near miss: the 503s alone (no rank's exception) stay the health check's
def test_health_503s_alone_stay_health_check():
    assert reads("\n".join(_WARMUP + _SCHEDULER[-1:]) + "\n", family="sglang")[:2] == (True, "health_check")


# --- h98005: a PD decode queue's aborts are the scheduler loop's lines -------------------------------------------

def _decode(after: list[str]) -> str:
    return "\n".join([
        "[2025-11-21 16:20:31] The server is fired up and ready to roll!",
        '[2025-11-21 16:21:47] INFO:     10.0.0.1:49888 - "POST /v1/completions HTTP/1.1" 200 OK',
        "[2025-11-21 16:23:36 TP0] Decode batch, #running-req: 1, #token: 10278, token usage: 0.07, #transfer-req: 14, "
        "cuda graph: False, gen throughput (token/s): 0.82, #queue-req: 0, ",
        *after,
        *(f'[2025-11-21 16:{m}:37] INFO:     10.0.0.1:46114 - "GET /health HTTP/1.1" 200 OK' for m in range(27, 32)),
    ]) + "\n"


def test_decode_queue_aborts_after_the_last_batch_are_no_hang():
    aborted = ["[2025-11-21 16:26:59 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='58' "
               "decode_req.req.bootstrap_room=42 with exception KVTransferError(bootstrap_room=42): Request 42 timed "
               "out after 300.0s in KVPoll.WaitingForInput",
               '[2025-11-21 16:26:59] INFO:     10.0.0.1:57156 - "POST /v1/completions HTTP/1.1" 500 Internal Server '
               "Error"]
    assert reads(_decode(aborted), family="sglang")[0] is False


# near miss: the same silence with no line of the scheduler's loop after the batch line is still a hang
def test_the_silence_alone_is_still_a_hang():
    assert reads(_decode([]), family="sglang")[:2] == (True, "hang")


# --- the texts cited from wheels ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("fastapi", "0.112.0", "fastapi/dependencies/utils.py", 68,
     "'Form data requires \"python-multipart\" to be installed. \\n'"),
    ("fastapi", "0.112.0", "fastapi/dependencies/utils.py", 100, "raise RuntimeError(multipart_not_installed_error)"),
    ("fastapi", "0.112.0", "fastapi/dependencies/utils.py", 817, "check_file_field(final_field)"),
    ("sglang", "0.2.9", "sglang/launch_server.py", 5, "from sglang.srt.server import launch_server"),
    ("sglang", "0.2.9", "sglang/srt/server.py", 161, '@app.post("/v1/files")'),
    ("sglang", "0.2.9", "sglang/srt/server.py", 162, 'purpose: str = Form("batch")'),
    ("sglang", "0.3.4", "sglang/srt/model_executor/model_runner.py", 234, "self.vllm_model_config = VllmModelConfig("),
    ("sglang", "0.3.4", "sglang/srt/model_executor/model_runner.py", 236,
     "quantization=self.server_args.quantization,"),
    ("vllm", "0.5.5", "vllm/config.py", 297, '"Quantization method specified in the model config "'),
    ("vllm", "0.5.5", "vllm/model_executor/layers/quantization/awq_marlin.py", 86,
     "if can_convert and is_valid_user_quant:"),
    ("sglang", "0.4.5", "sglang/srt/configs/model_config.py", 299,
     '"Quantization method specified in the model config "'),
    ("sglang", "0.5.5.post3", "sglang/srt/configs/model_config.py", 706,
     '"Quantization method specified in the model config "'),
    ("sglang", "0.5.5.post3", "sglang/srt/disaggregation/decode.py", 736,
     'error_message = f"Decode transfer failed for request rank={self.tp_rank}'),
    ("sglang", "0.5.5.post3", "sglang/srt/disaggregation/decode.py", 792, "self.process_decode_queue()"),
    ("sglang", "0.5.5.post3", "sglang/srt/disaggregation/decode.py", 815, "self.process_decode_queue()"),
    ("sglang", "0.5.5.post3", "sglang/srt/entrypoints/http_server.py", 421, "return Response(status_code=503)"),
    ("sglang", "0.5.5.post3", "sglang/srt/environ.py", 296, "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION = EnvBool(True)"),
    ("sglang", "0.5.5.post3", "sglang/srt/models/deepseek_v2.py", 2271,
     "num_kv_split = forward_batch.attn_backend.num_kv_splits"),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
