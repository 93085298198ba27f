"""Held-out round 93 (issue 24): a unittest report ends the exception above it and SGLang's test harness's "Server
process exited" is an echo; torch_npu's caching allocator out of memory is cuda_oom; an EAGLE draft's fc refusing the
target's hidden states is draft_incompatible.

Round 93 (h93001-h93015; seven files of users' log repositories, eight thread excerpts) was measured once on main at
b1d7f9f (with the round's logs; staged again on main at 686bfc2 as 1500a29): crashed 15/15, kind 12/15, phase 14/14.
docs/diagnosis.md, "Held-out round 93", tells the round.

- h93003, an Ascend NPU server's warmup chat request answered with the server's own error (an NPU copy op refusing a
  tensor of more than 8 dimensions in the image processor), then a unittest harness's AssertionError "Test failed
  for ...: Server process exited with code -9. Check server logs for errors." and the runner's report, whose
  command line ("command=sglang serve --model-path ...") was read as part of the message and as a refused flag. The
  report ends the message (CPython 3.11.7 Lib/unittest/runner.py:36, :226-229; diagnosis/unittest_reports.py
  UNITTEST_REPORT), and the harness's words are an echo of the server's exit (0.5.10 sglang/test/test_utils.py:794, :961, :975;
  diagnosis/signatures.py WRAPPERS): the warmup's error answer, health_check at ready, decides. Ddlab's.
- h93005, a PD decode node on 16 NPUs: torch_npu's "NPU out of memory. Tried to allocate 4.00 GiB (NPU 4; ...)"
  printed by terminate as what() during CUDA graph capture, then "Fatal Python error: Aborted" (Ascend/pytorch
  9e73e70 torch_npu/csrc/core/npu/NPUCachingAllocator.cpp:1377): cuda_oom (crashes/kinds/memory.py). Ddlab's.
- h93014, an EAGLE draft made for Llama-3.1-8B under a 70B target: "mat1 and mat2 shapes cannot be multiplied
  (4x12288 and 8192x4096)" in the draft's fc (0.4.3.post2 sglang/srt/models/llama_eagle.py:74, :88), wrapped by the
  draft's capture: draft_incompatible (crashes/kinds/speculative.py draft_fc_shape). Ddlab's.

Each positive test fails on 1500a29 (but the raised OutOfMemoryError, read so before by its type).
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 93)


def test_round93_is_folded_into_work_with_no_dispute_and_no_miss_left():
    assert _IDS == [f"h930{n:02d}" for n in range(1, 16)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "reading"), [
    ("h93003", (True, "health_check", "ready")),
    ("h93005", (True, "cuda_oom", "graph_capture")),
    ("h93014", (True, "draft_incompatible", "graph_capture")),
], ids=["h93003", "h93005", "h93014"])
def test_the_rounds_misses_read_as_settled(log_id, reading):
    found = real(log_id)
    assert (found.crashed, found.kind if found.crashed else None, found.phase) == reading


# --- h93003: a test harness's report after the server died ------------------------------------------------------

_SGL = "/home/user/sglang/python/sglang"
_WARMUP = [
    "[2026-06-09 03:35:22] INFO:     Application startup complete.",
    "[2026-06-09 03:35:23] Initialization failed. warmup error: Traceback (most recent call last):",
    f'  File "{_SGL}/srt/entrypoints/http_server.py", line 2018, in _execute_server_warmup',
    '    assert res.status_code == 200, f"{res.text}"',
    'AssertionError: {"object":"error","message":"Internal server error: NPU function error: call aclnnInplaceCopy '
    'failed, error code is 161002","type":"InternalServerError","param":null,"code":500}',
    "",
    "[2026-06-09 03:35:23] kill_process_tree called: parent_pid=1, include_parent=True, pid=1",
]
_HARNESS = [
    "E",
    "======================================================================",
    "ERROR: setUpClass (__main__.TestServer)",
    "----------------------------------------------------------------------",
    "Traceback (most recent call last):",
    f'  File "{_SGL}/test/test_utils.py", line 975, in popen_launch_server',
    '    raise Exception(error_msg + ". Check server logs for errors.")',
    "Exception: Server process exited with code -9. Check server logs for errors.",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    f'  File "{_SGL}/test/test_utils.py", line 2113, in safe_setUpClass',
    "    orig_func(klass)",
    "AssertionError: Test failed for Qwen/Qwen3-8B: Server process exited with code -9. Check server logs for errors.",
    "",
    "----------------------------------------------------------------------",
    "Ran 0 tests in 60.011s",
    "",
    "FAILED (errors=1)",
    "command=sglang serve --model-path Qwen/Qwen3-8B --tp-size 2 --mem-fraction-static 0.8",
]


# the warmup's error answer decides, the harness's report after it does not (its command line names flags)
def test_a_test_harness_report_after_the_warmup_error_is_not_a_refused_flag():
    assert reads("\n".join(_WARMUP + _HARNESS) + "\n", family="sglang") == (True, "health_check", "ready")


# the harness's echo alone, with nothing of the server's log: no cause read into its command line
def test_the_harness_echo_alone_reads_no_refused_flag():
    crashed, kind, _ = reads("\n".join(_HARNESS) + "\n", family="sglang")
    assert (crashed, kind) == (True, "unknown")


# near miss: an error that names a flag, with no unittest report after it, is still a refused flag
def test_an_error_naming_a_flag_is_still_a_refused_flag():
    text = "\n".join([
        "Traceback (most recent call last):",
        f'  File "{_SGL}/launch_server.py", line 14, in <module>',
        "    launch_server(server_args)",
        "ValueError: --tool-call-parser qwen99 is not supported",
        "command=sglang serve --model-path Qwen/Qwen3-8B",
    ]) + "\n"
    assert reads(text, family="sglang")[1] == "bad_argument"


# --- h93005: torch_npu's caching allocator out of memory ---------------------------------------------------------

_NPU_OOM = ("NPU out of memory. Tried to allocate 4.00 GiB (NPU 4; 61.27 GiB total capacity; 52.08 GiB already "
            "allocated; 52.08 GiB current active; 1.50 GiB free; 57.79 GiB reserved in total by PyTorch) If reserved "
            "memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation")


# the uncaught C++ exception's what() (the log's), and the OutOfMemoryError Python raises with the same text (read
# so before this round too, by its type: the one case here that does not fail on 1500a29)
@pytest.mark.parametrize("lines", [
    ["[2026-01-19 20:23:03 TP4] Capture cuda graph begin. This can take up to several minutes.",
     "terminate called after throwing an instance of 'c10::Error'", f"  what():  {_NPU_OOM}",
     "Exception raised from malloc at build/CMakeFiles/torch_npu.dir/compiler_depend.ts:1634 (most recent call first):",
     "Fatal Python error: Aborted"],
    ["Traceback (most recent call last):",
     f'  File "{_SGL}/srt/model_executor/model_runner.py", line 301, in load_model',
     "    self.model = get_model(model_config=self.model_config)",
     f"torch.OutOfMemoryError: {_NPU_OOM}"],
], ids=["what-in-capture", "raised"])
def test_torch_npu_out_of_memory_is_cuda_oom(lines):
    assert reads("\n".join(lines) + "\n", family="sglang")[:2] == (True, "cuda_oom")


# near miss: an abort whose what() is another NPU error stays a native crash
def test_an_abort_with_another_npu_error_is_not_cuda_oom():
    text = "\n".join([
        "terminate called after throwing an instance of 'c10::Error'",
        "  what():  NPU function error: aclrtMemcpy, error code is 507899",
        "Fatal Python error: Aborted",
    ]) + "\n"
    assert reads(text, family="sglang")[1] != "cuda_oom"


# --- h93014: an EAGLE draft's fc refusing the target's hidden states ---------------------------------------------

_SRT = "/venv/lib/python3.11/site-packages/sglang/srt"
_TORCH = "/venv/lib/python3.11/site-packages/torch"


def _draft_fc(model_file: str, code: str, wrapped: bool) -> str:
    lines = [
        "[2025-03-12 15:31:30 TP1] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{_SRT}/speculative/eagle_worker.py", line 260, in draft_forward',
        "    logits_output = self.model_runner.model.forward(",
        f'  File "{_SRT}/models/{model_file}", line 88, in forward',
        f"    {code}",
        f'  File "{_TORCH}/nn/modules/linear.py", line 125, in forward',
        "    return F.linear(input, self.weight, self.bias)",
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x12288 and 8192x4096)",
    ]
    if wrapped:
        lines += [
            "", "During handling of the above exception, another exception occurred:", "",
            "Traceback (most recent call last):",
            f'  File "{_SRT}/speculative/eagle_draft_cuda_graph_runner.py", line 82, in __init__',
            "    raise Exception(",
            "Exception: Capture cuda graph failed: mat1 and mat2 shapes cannot be multiplied (4x12288 and 8192x4096)",
        ]
    return "\n".join(lines) + "\n"


# EAGLE's fc (llama, qwen2), EAGLE3's, in the draft's capture or its first eager forward
@pytest.mark.parametrize(("model_file", "code", "wrapped"), [
    ("llama_eagle.py", "hidden_states = self.fc(", True),
    ("qwen2_eagle.py", "hidden_states = self.fc(", False),
    ("llama_eagle3.py", "hidden_states = self.fc(hidden_states)", False),
], ids=["llama-eagle-capture", "qwen2-eagle-eager", "eagle3"])
def test_an_eagle_drafts_fc_refusing_the_target_is_draft_incompatible(model_file, code, wrapped):
    assert reads(_draft_fc(model_file, code, wrapped), family="sglang")[:2] == (True, "draft_incompatible")


# near miss: the same matmul refusal in a target model's own layer is no draft's
def test_a_matmul_refusal_outside_a_drafts_fc_is_not_draft_incompatible():
    text = _draft_fc("llama.py", "hidden_states = self.mlp(hidden_states)", wrapped=True)
    assert reads(text, family="sglang")[1] != "draft_incompatible"


# --- the texts cited from wheels ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.5.10", "sglang/test/test_utils.py", 794,
     'return False, f"Server process exited with code {return_code}"'),
    ("sglang", "0.5.10", "sglang/test/test_utils.py", 975,
     'raise Exception(error_msg + ". Check server logs for errors.")'),
    ("sglang", "0.4.3.post2", "sglang/srt/models/llama_eagle.py", 74,
     "self.fc = torch.nn.Linear(config.hidden_size * 2, config.hidden_size)"),
    ("sglang", "0.4.3.post2", "sglang/srt/models/llama_eagle.py", 88, "hidden_states = self.fc("),
    ("sglang", "0.4.3.post2", "sglang/srt/speculative/eagle_draft_cuda_graph_runner.py", 82, "raise Exception("),
    ("sglang", "0.5.10", "sglang/srt/models/llama_eagle.py", 97, "hidden_states = self.fc("),
    ("sglang", "0.5.10", "sglang/srt/models/qwen2_eagle.py", 98, "hidden_states = self.fc("),
    ("sglang", "0.5.10", "sglang/srt/models/llama_eagle3.py", 177, "hidden_states = self.fc(hidden_states)"),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
