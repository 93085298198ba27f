"""Held-out round 66 (issue 24): a reasoning parser's think-end token, an NPU's vector core exception code.

Round 66 (h66001-h66008; excerpts of issue threads) was measured once on main at fa8b329 (with the round's
logs, 7fb0f02): crashed 8/8, kind 6/8, phase 5/5. docs/diagnosis.md, "Held-out round 66", tells the round.
Both misses were ddlab's:

- h66003, "ValueError: think_end_token '</think>' must encode to exactly one token for constrained reasoning.":
  with a --reasoning-parser the grammar backend is wrapped in ReasonerGrammarBackend, which refuses a think-end
  token the model's tokenizer does not encode as one token (0.5.12 / 0.5.13
  constrained/reasoner_grammar_backend.py:237-239, built at base_grammar_backend.py:306 in the scheduler):
  ``bad_argument`` by ``reasoning_parser_tokenizer`` (crashes/kinds/parsers.py).
- h66006, torch_npu's "NPU function error: ...AclrtSynchronizeStreamWithTimeout(copy_stream), error code is
  507035", quoted in markdown: 507035 is CANN's vector core exception (torch_npu 2.5.1
  rt_error_codes.h:94, NPUErrorCodes.h:356): ``cuda_illegal_access`` by ``npu_fault_code``, read for vLLM
  only until now and in SGLang's signatures from this round (device_crashes/device.py).

No label was disputed. Each positive test here fails on 7fb0f02.
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed,
                      folded_round, said)

_IDS = folded_round(REAL_MANIFEST, 66)


def test_round66_is_folded_into_work_with_no_label_disputed():
    assert _IDS == [f"h660{n:02d}" for n in range(1, 9)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h66003", "reasoning_parser_tokenizer"),
    ("h66006", "npu_fault_code"),
], ids=lambda v: v)
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h66001", None), ("h66002", None), ("h66004", None), ("h66005", None), ("h66007", "weight_name_unknown"),
    ("h66008", None),
], ids=lambda v: v if isinstance(v, str) else "no signature")
def test_each_other_log_of_the_round_reads_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h66003: the reasoning parser's think-end token is not one token of the model's tokenizer ------------

_SCHEDULER_TB = (
    "[2026-03-02 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 1598, in __init__\n'
    "    self.grammar_manager = GrammarManager(self)\n"
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/constrained/base_grammar_backend.py", line 306, '
    "in create_grammar_backend\n"
    "    grammar_backend = ReasonerGrammarBackend(\n"
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/constrained/reasoner_grammar_backend.py", '
    "line 237, in __init__\n"
    "    raise ValueError(\n")


# the same refusal in other forms, written from 0.5.13's source: the scheduler's traceback, the empty encoding
@pytest.mark.parametrize("text", [
    _SCHEDULER_TB + "ValueError: think_end_token '</think>' must encode to exactly one token for constrained "
                    "reasoning.\n",
    "ValueError: think_end_token '<|end_of_thought|>' could not be encoded by the tokenizer.\n",
], ids=["0.5.13-traceback", "not-encoded"])
def test_a_think_end_token_the_tokenizer_splits_is_a_bad_argument(text):
    assert said(text) == (True, "bad_argument", "reasoning_parser_tokenizer")


# near misses: the excluded tokens' own check, another exception type, a warning that goes on
@pytest.mark.parametrize("text", [
    "ValueError: think_excluded_token '<think>' could not be encoded by the tokenizer.\n",
    "KeyError: \"think_end_token '</think>' must encode to exactly one token\"\n",
    "[2026-03-02 10:00:01] WARNING: think_end_token '</think>' encodes to 3 tokens; constrained reasoning off\n",
], ids=["excluded-token", "keyerror", "warning"])
def test_other_think_token_texts_are_not_read_so(text):
    assert said(text)[2] != "reasoning_parser_tokenizer"


# --- h66006: an ACL synchronize returning the vector core exception -------------------------------------

# the same code in other forms, written from torch_npu's source: its stream synchronize check, a 507036
# (vector core trap) in a traceback of SGLang's scheduler
@pytest.mark.parametrize("text", [
    "RuntimeError: ACL stream synchronize failed, error code:507035\n",
    "Traceback (most recent call last):\n"
    '  File "/usr/local/python3.11/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 2100, '
    "in run_batch\n"
    "    next_token_ids = logits.argmax(-1).tolist()\n"
    "RuntimeError: tolist:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:40 NPU function error: "
    "c10_npu::acl::AclrtSynchronizeStreamWithTimeout(copy_stream), error code is 507036\n"
    "[ERROR] 2025-10-01-11:00:00 (PID:1234, Device:0, RankID:-1) ERR00100 PTA call acl api failed\n",
], ids=["stream-synchronize", "507036-traceback"])
def test_an_npu_fault_code_in_sglangs_log_is_an_illegal_access(text):
    assert said(text) == (True, "cuda_illegal_access", "npu_fault_code")


# near misses: a code that is no fault of the device (107002, "current context null"), a longer number, prose
@pytest.mark.parametrize("text", [
    "RuntimeError: operator():build/CMakeFiles/torch_npu.dir/compiler_depend.ts:26 NPU function error: "
    "c10_npu::acl::AclrtSynchronizeStreamWithTimeout(copy_stream), error code is 107002\n",
    "RuntimeError: operator():build/CMakeFiles/torch_npu.dir/compiler_depend.ts:26 NPU function error: "
    "c10_npu::acl::AclrtSynchronizeStreamWithTimeout(copy_stream), error code is 5070351\n",
    "My NPU shows error code is 507035 sometimes, any idea?\n",
], ids=["107002", "longer-number", "prose"])
def test_other_npu_codes_are_not_read_so(text):
    assert said(text)[2] != "npu_fault_code"


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.5.12", "sglang/srt/constrained/reasoner_grammar_backend.py", 239,
     '"must encode to exactly one token for constrained reasoning."'),
    ("sglang", "0.5.13", "sglang/srt/constrained/reasoner_grammar_backend.py", 239,
     '"must encode to exactly one token for constrained reasoning."'),
    ("sglang", "0.5.12", "sglang/srt/constrained/reasoner_grammar_backend.py", 234,
     'f"could not be encoded by the tokenizer."'),
    ("sglang", "0.5.13", "sglang/srt/constrained/base_grammar_backend.py", 306,
     "grammar_backend = ReasonerGrammarBackend("),
    ("sglang", "0.5.13", "sglang/srt/managers/scheduler.py", 1598, "self.grammar_manager = GrammarManager(self)"),
    ("sglang", "0.5.19", "sglang/srt/constrained/reasoner_grammar_backend.py", 53,
     "self._think_end_matcher = TokenSequenceMatcher(self.think_end_ids)"),
    ("torch_npu", "2.5.1", "torch_npu/include/third_party/acl/inc/acl/error_codes/rt_error_codes.h", 94,
     "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION      = 507035; // vector core exception"),
    ("torch_npu", "2.5.1", "torch_npu/include/torch_npu/csrc/core/npu/NPUErrorCodes.h", 356,
     '{507035, "The vector core execution is abnormal.'),
    ("torch_npu", "2.10.0", "torch_npu/include/third_party/acl/inc/acl/error_codes/rt_error_codes.h", 115,
     "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION      507035 // vector core exception"),
], ids=lambda v: str(v).rsplit("/", 1)[-1] if isinstance(v, str) else str(v))
def test_each_line_the_rules_cite_is_the_releases(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
