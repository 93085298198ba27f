"""Held-out round 59 (issue 24): the warmup's status check that carries only the server's own error answer.

Round 59 (h59001-h59010; excerpts of issue threads and pull requests) was measured once on main at 3e01c63
(with the round's logs, fe6251f): crashed 10/10, kind 9/10, phase 6/6. docs/diagnosis.md, "Held-out round 59",
tells the round. Its one miss, h59008's kind (ddlab said unknown; labelled health_check), is read as labelled
by warmup_error_body (crashes/kinds/warmup.py): from 0.5.5.post3 the launcher's warmup asserts
``res.status_code == 200, f"{res.text}"``, so its AssertionError is the answer's body, and where that body is
the server's own error answer (the OpenAI handlers' ErrorResponse, /generate's ``{"error": {"message":
...}}``) the warmup request failing is the kind and the body's message the detail. This module holds the fold,
each log's reading, the rule in other forms (0.5.23's frame, /generate's body), near misses that must not read
that way, and the wheels' lines the rule cites (skipped where a wheel is not unpacked).
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, REAL, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed,
                      folded_round, real, said)

_IDS = folded_round(REAL_MANIFEST, 59)


def test_round59_is_folded_into_work_with_no_label_disputed_and_no_miss_left():
    assert _IDS == [f"h590{i:02d}" for i in range(1, 11)]
    assert not disputed(REAL_MANIFEST, _IDS)
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h59001", None),                   # 'Scheduler hit an exception' in load_model, cut before the exception
    ("h59002", None),                   # a DP/TP-tagged scheduler traceback through the EAGLE worker, cut
    ("h59003", "cuda_illegal_access"),  # graph replay's torch.AcceleratorError: an illegal instruction
    ("h59004", "native_crash"),         # interleaved 'Fatal Python error: Segmentation fault' headers
    ("h59005", None),                   # scheduler-startup frames padded with spaces, cut in TpModelWorker
    ("h59006", None),                   # a fork's model __init__ TypeError no signature explains
    ("h59007", None),                   # a 0.2.x launch_server traceback into TokenizerManager, cut
    ("h59008", "warmup_error_body"),    # the warmup's 500 whose body is the server's own error answer
    ("h59009", None),                   # untuned-GEMM and type-hint notices only: healthy
    ("h59010", "dependency_mismatch"),  # sgl_kernel's undefined symbol
], ids=lambda v: v if isinstance(v, str) else "no signature")
def test_each_log_of_the_round_reads_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


def test_h59008s_advice_is_the_bodys_error_not_a_proxy_or_a_timeout():
    advice = real("h59008").suggestion
    assert "Internal server error: copy_d2d_baseformat_opapi" in advice
    assert "aclnnInplaceCopy refused its call (error code 161002)" in advice
    assert "--skip-server-warmup" in advice
    assert "proxy in the environment" not in advice and "py-spy" not in advice


_HEAD = "[2026-01-05 10:00:00] Initialization failed. warmup error: Traceback (most recent call last):\n"
_SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/http_server.py"


def _warmup(line: int, body: str, func: str = "_execute_server_warmup") -> str:
    return (_HEAD + f'  File "{_SITE}", line {line}, in {func}\n'
            '    assert res.status_code == 200, f"{res.text}"\n'
            f"AssertionError: {body}\n")


# the same source text in other forms: 0.5.23's frame (http_server.py:2501) with an OpenAI handler's
# BadRequest answer (serving_base.py), /generate's {"error": {"message": ...}} (0.5.7 http_server.py:1462)
# from 0.5.7's frame (:1566), and 0.5.5.post3's (:1521) with a CUDA error in the body
@pytest.mark.parametrize("text", [
    _warmup(2501, '{"object":"error","message":"The input image could not be decoded.","type":"BadRequest",'
                  '"param":null,"code":400}'),
    _warmup(1566, '{"error":{"message":"Multimodal prompt has no image tokens"}}'),
    _warmup(1521, '{"object": "error", "message": "Internal server error: boom", "type": '
                  '"InternalServerError", "param": null, "code": 500}'),
], ids=["0.5.23-openai-400", "0.5.7-generate", "0.5.5.post3-spaced"])
def test_the_warmups_error_answer_in_other_forms_is_health_check(text):
    assert said(text) == (True, "health_check", "warmup_error_body")


def test_a_generate_body_gets_its_message_and_no_npu_words():
    from ddlab.diagnosis.diagnosis import diagnose
    text = _warmup(1566, '{"error":{"message":"Multimodal prompt has no image tokens"}}')
    advice = diagnose(text).suggestion
    assert "The warmup's answer was the server's own error: Multimodal prompt has no image tokens." in advice
    assert "torch_npu" not in advice and "Error in request:" not in advice


def test_a_body_whose_error_a_signature_knows_is_that_signatures_kind():
    # the warmup's failure is an echo: an error the body names that a signature reads is the cause
    text = _warmup(1566, '{"error":{"message":"CUDA error: an illegal memory access was encountered"}}')
    assert said(text) == (True, "cuda_illegal_access", "cuda_illegal_access")


# near misses: the same JSON error raised outside the warmup (a client script's own check, a request's error
# while serving), a warmup whose body is a proxy's page, not the server's answer
@pytest.mark.parametrize("text", [
    ("Traceback (most recent call last):\n"
     '  File "/home/u/bench/client.py", line 40, in main\n'
     '    assert res.status_code == 200, f"{res.text}"\n'
     'AssertionError: {"object":"error","message":"Internal server error: boom","type":"InternalServerError",'
     '"param":null,"code":500}\n'),
    ('[2026-01-05 10:00:00] INFO:     127.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 500 '
     'Internal Server Error\n'
     '[2026-01-05 10:00:01] {"object":"error","message":"Internal server error: boom"}\n'),
    _warmup(1566, "<html><head><title>502 Bad Gateway</title></head></html>"),
], ids=["client-script", "serving-500", "proxy-page"])
def test_near_misses_are_not_the_warmups_error_answer(text):
    assert said(text)[2] != "warmup_error_body"


_SRT = "sglang/srt/entrypoints"


@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.5.5.post3", f"{_SRT}/http_server.py", 1521, 'assert res.status_code == 200, f"{res.text}"'),
    ("0.5.7", f"{_SRT}/http_server.py", 1566, 'assert res.status_code == 200, f"{res.text}"'),
    ("0.5.23", f"{_SRT}/http_server.py", 2501, 'assert res.status_code == 200, f"{res.text}"'),
    ("0.5.5.post3", f"{_SRT}/openai/serving_base.py", 128, 'message=f"Internal server error: {str(e)}"'),
    ("0.5.7", f"{_SRT}/openai/serving_base.py", 143, 'message=f"Internal server error: {str(e)}"'),
    ("0.5.23", f"{_SRT}/openai/serving_base.py", 139, 'message=f"Internal server error: {str(e)}"'),
    ("0.5.7", f"{_SRT}/openai/protocol.py", 73, 'object: str = "error"'),
    ("0.5.7", f"{_SRT}/http_server.py", 1462, '{"error": {"message": str(e)}}'),
], ids=lambda v: str(v).rsplit("/", 1)[-1])
def test_each_line_the_rule_cites_is_the_releases(release, path, line, text):
    assert_at_line("sglang", release, path, line, text)


def test_h59008s_frame_is_at_the_status_check_of_a_release_after_0_5_5_post3():
    # no release of 0.5.5 to 0.5.6.post2 has the check at line 1566 (0.5.6 has it at 1567): a build of main
    assert 'http_server.py", line 1566, in _execute_server_warmup' in (REAL / "h59008.log").read_text()
    assert_at_line("sglang", "0.5.6", f"{_SRT}/http_server.py", 1567,
                   'assert res.status_code == 200, f"{res.text}"')
