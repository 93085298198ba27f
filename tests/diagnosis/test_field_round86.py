"""Held-out round 86 (issue 24): the tokenizer manager's per-request wait; a job launcher's command-and-rank tag.

Round 86 (h86001-h86008; excerpts of SGLang issue and PR threads) was measured once on main at 7a790e5 (with the
round's logs, 5387b79): crashed 6/8, kind 6/8, phase 5/6. docs/diagnosis.md, "Held-out round 86", tells the round.
Both misses were ddlab's:

- h86002, one frame of the tokenizer manager's ``_wait_one_response`` ("state = self.rid_to_state[obj.rid]") and
  its KeyError: that coroutine waits for one request's output in the HTTP server's process (0.5.16
  sglang/srt/managers/tokenizer_manager.py:1482-1488; generate_request :624, :667), and what it raises goes to that
  request's handler, which answers it 500 (entrypoints/openai/serving_base.py:127-133). A traceback whose innermost
  SGLang frame is it (or generate_request) is one request's error: request_error at serving
  (crashes/kinds/request_waits.py TOKENIZER_REQUEST_WAIT, in requests.REQUEST_FRAMES).
- h86003, a traceback under "[2025-12-08 15:20:22] [/bin/sh@<0,0>]: " on each line, cut before its exception: a
  job launcher's time and its tag of the command and two indices, peeled as a paste prefix
  (diagnosis/viewer_prefixes.py CMD_RANK_TAG); the cut traceback then reads crashed unknown.

Each positive test fails on 5387b79.
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.logtext import split_lines
from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 86)


def test_round86_is_folded_into_work_with_nothing_disputed():
    assert _IDS == [f"h860{n:02d}" for n in range(1, 9)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


def test_h86002_reads_request_error_and_h86003_a_cut_crash():
    assert (real("h86002").crashed, real("h86002").kind, real("h86002").phase) == (False, "request_error", "serving")
    assert (real("h86003").crashed, real("h86003").kind) == (True, "unknown")


# --- h86002: the tokenizer manager's per-request coroutines ----------------------------------------------------------

_MGR = "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/tokenizer_manager.py"
_ASYNCIO = '  File "/usr/lib/python3.12/asyncio/tasks.py", line 520, in wait_for\n    return await fut\n'


def _frame(line: int, func: str, code: str) -> str:
    return f'  File "{_MGR}", line {line}, in {func}\n    {code}\n'


# 0.5.12's wait (:1291) under generate_request's call (:557), then its KeyError; 0.5.16's generate_request's own lookup
# (:663); 0.5.16's wait at its wait_for (:1493) with asyncio's frame below it (the standard library's, not SGLang's)
@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n"
    + _frame(557, "generate_request", "async for response in self._wait_one_response(obj, request):")
    + _frame(1291, "_wait_one_response", "state = self.rid_to_state[obj.rid]")
    + "KeyError: 'a1b2c3d4e5f60718293a4b5c6d7e8f90'\n",
    "Traceback (most recent call last):\n"
    + _frame(663, "generate_request", "state = self.rid_to_state[obj.rid]")
    + "KeyError: '0f1e2d3c4b5a69788796a5b4c3d2e1f0'\n",
    "Traceback (most recent call last):\n"
    + _frame(1493, "_wait_one_response", "await asyncio.wait_for(") + _ASYNCIO
    + "asyncio.exceptions.CancelledError\n",
], ids=["0.5.12-wait", "0.5.16-generate-request", "0.5.16-wait-asyncio"])
def test_an_error_in_one_requests_wait_is_that_requests(text):
    assert reads(text, family="sglang") == (False, "request_error", "serving")


# near misses: the output loop's frames below generate_request's (0.5.16 handle_loop :1893 -> _handle_batch_output,
# the whole server's loop), the output loop alone, a generate_request of another module, prose naming the frame
@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n"
    + _frame(667, "generate_request", "async for response in self._wait_one_response(obj, request):")
    + _frame(1893, "handle_loop", "await self._handle_batch_output(recv_obj)")
    + _frame(1931, "_handle_batch_output", '"num_retractions": recv_obj.retraction_counts[i],')
    + "IndexError: list index out of range\n",
    "Traceback (most recent call last):\n"
    + _frame(1893, "handle_loop", "await self._handle_batch_output(recv_obj)")
    + _frame(1931, "_handle_batch_output", '"num_retractions": recv_obj.retraction_counts[i],')
    + "IndexError: list index out of range\n",
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 900, in generate_request\n'
    "    state = self.rid_to_state[obj.rid]\nKeyError: 'x'\n",
    "the tokenizer_manager.py _wait_one_response frame raised KeyError: 'x' for us\n",
], ids=["output-loop-below", "output-loop", "other-module", "prose"])
def test_other_frames_are_not_one_requests(text):
    assert reads(text, family="sglang")[1] != "request_error"


# --- h86003: a job launcher's tag of the command and its indices --------------------------------------------------

_FRAMES = ('  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 1505, in set_kv_buffer',
           "    assert not (self.use_nsa and self.nsa_kv_cache_store_fp8)")


# the tag after the launcher's time or alone, another command and ranks, a full traceback whose exception decides
@pytest.mark.parametrize(("tag", "expected"), [
    ("[2026-01-05 09:00:01] [python3@<1,3>]: ", (True, "cuda_oom")),
    ("[bash@<0,12>]: ", (True, "cuda_oom")),
])
def test_the_launchers_tag_is_peeled(tag, expected):
    body = ["Traceback (most recent call last):", *_FRAMES,
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.11 GiB of which 1.02 GiB is free."]
    text = "\n".join(tag + line for line in body) + "\n"
    assert [line.msg for line in split_lines(text)] == body
    assert reads(text, family="sglang")[:2] == expected


def test_a_cut_traceback_under_the_tag_is_a_cut_crash():
    text = "".join(f"[2025-12-08 15:20:22] [/bin/sh@<0,0>]: {line}\n" for line in _FRAMES[:1])
    assert reads(text, family="sglang")[:2] == (True, "unknown")
    assert split_lines(text)[0].msg == _FRAMES[0]


# near misses: a user@host prompt (no indices), a command with a space, the tag glued to the text, the tag inside
# a line: none is the launcher's whole-line prefix
@pytest.mark.parametrize("line", [
    "[root@node1]: python -m sglang.launch_server",
    "[/bin/sh -c@<0,0>]: hello",
    "[/bin/sh@<0,0>]:hello",
    "the launcher printed [/bin/sh@<0,0>]: before each line",
])
def test_other_brackets_are_kept(line):
    assert split_lines(line)[0].msg == line


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.5.16", "managers/tokenizer_manager.py", 624, "async def generate_request("),
    ("0.5.16", "managers/tokenizer_manager.py", 663, "state = self.rid_to_state[obj.rid]"),
    ("0.5.16", "managers/tokenizer_manager.py", 667, "async for response in self._wait_one_response(obj, request):"),
    ("0.5.16", "managers/tokenizer_manager.py", 1482, "async def _wait_one_response("),
    ("0.5.16", "managers/tokenizer_manager.py", 1488, "state = self.rid_to_state[obj.rid]"),
    ("0.5.16", "managers/tokenizer_manager.py", 1893, "await self._handle_batch_output(recv_obj)"),
    ("0.5.16", "managers/tokenizer_manager.py", 1899, "async def _handle_batch_output("),
    ("0.5.16", "entrypoints/openai/serving_base.py", 127, "except Exception as e:"),
    ("0.5.16", "entrypoints/openai/serving_base.py", 128, 'logger.exception(f"Error in request: {e}")'),
    ("0.5.16", "entrypoints/openai/serving_base.py", 132, "status_code=500,"),
    ("0.5.12", "managers/tokenizer_manager.py", 1285, "async def _wait_one_response("),
    ("0.5.12", "managers/tokenizer_manager.py", 1291, "state = self.rid_to_state[obj.rid]"),
    ("0.5.12", "entrypoints/openai/serving_base.py", 127, "except Exception as e:"),
    ("0.5.23", "managers/tokenizer_manager.py", 1936, "def _wait_one_response("),
    ("0.5.23", "managers/tokenizer_manager.py", 1943, "state = self.rid_to_state[obj.rid]"),
    ("0.5.23", "entrypoints/openai/serving_base.py", 137, 'logger.exception(f"Error in request: {e}")'),
    ("0.5.12", "managers/tokenizer_manager.py", 557, "async for response in self._wait_one_response(obj, request):"),
    ("0.5.16", "managers/tokenizer_manager.py", 1493, "await asyncio.wait_for("),
    ("0.5.16", "managers/tokenizer_manager.py", 1931, '"num_retractions": recv_obj.retraction_counts[i],'),
    ("0.5.23", "utils/common.py", 2630, 'format = f"[%(asctime)s{maybe_ms}{prefix}] %(message)s"'),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(release, path, line, text):
    assert_at_line("sglang", release, f"sglang/srt/{path}", line, text)
