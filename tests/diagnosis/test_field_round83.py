"""Held-out round 83 (issue 24): sglang-jax's precompile; the launcher's warmup batch before "ready to roll".

Round 83 (h83001-h83011; excerpts of SGLang, sglang-jax, ktransformers, flashinfer and Xinference threads) was
measured once on main at f215349 (with the round's logs, e6e2978): crashed 11/11, kind 11/11, phase 4/6.
docs/diagnosis.md, "Held-out round 83", tells the round. Of its two phase misses:

- h83011, "[Scheduler] begins to run worker precompile.", "[EXTEND] begin to precompile", "[EXTEND] precompile
  (bs=32, num_tokens=4096)": sglang-jax compiling its forward once per padded size before it serves, its graph
  capture (sgl-project/sglang-jax 897c212 python/sgl_jax/srt/managers/scheduler.py:288-291, managers/tp_worker.py:
  185, :191, :206, :297, :299; cddbf6f model_executor/compilation_manager.py:161-168, :204, :219-226, :275), was ddlab's:
  graph_capture (JAX_PRECOMPILE, diagnosis/precompile_lines.py). Its positive tests fail on e6e2978.
- h83006, one 6-token Prefill batch after GET /get_model_info, then "NaN in the logits": the launcher's warmup
  request (0.3.5 srt/server.py:499-559), "ready to roll" never logged: ddlab's `ready` stands, the phase disputed.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 83)


def test_round83_is_folded_into_work_with_h83006s_phase_disputed():
    assert _IDS == [f"h830{n:02d}" for n in range(1, 12)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h83006"]
    assert REAL_MANIFEST["h83006"]["phase_disputed"] == ["serving", "ready"]
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


def test_h83011_reads_graph_capture_and_h83006_ready():
    assert (real("h83011").crashed, real("h83011").signature, real("h83011").phase) == (False, None, "graph_capture")
    assert real("h83006").phase == "ready"


# --- h83011: sglang-jax's precompile --------------------------------------------------------------------------------

_STAMP = "[2025-08-28 07:02:44] "
_DECODE_897C = (f"{_STAMP}[DECODE] begin to precompile\n"
                f"{_STAMP}[DECODE] precompile (bs=1)\n"
                f"{_STAMP}[DECODE] precompile (bs=4)\n")
_LATER = (f"{_STAMP}[Scheduler] Begins to run worker precompile.\n"
          f"{_STAMP}[EXTEND] Begin to precompile bs_paddings=[32] token_paddings=[1024, 4096]\n"
          "[EXTEND] PRECOMPILE:  50%|#####     | 1/2 [00:31<00:31, bs=32, tokens=1024]\n")


# 897c212's DECODE pass, the scheduler's line alone, cddbf6f's capitalised lines and tqdm bar, the spec-decode
# scheduler line, the passes' end lines after a start-up's load (past memory_pool)
@pytest.mark.parametrize("text", [
    _DECODE_897C,
    f"{_STAMP}[Scheduler] begins to run worker precompile.\n",
    _LATER,
    f"{_STAMP}[Scheduler] Begins to run spec_decode worker precompile.\n",
    f"{_STAMP}Load weight end. type=Qwen3ForCausalLM\n{_STAMP}[EXTEND] Precompile finished in 62 secs\n"
    f"{_STAMP}[DECODE] Precompile finished in 40 secs\n{_STAMP}[Scheduler] Completes worker precompile.\n",
], ids=["decode-897c212", "scheduler-line", "cddbf6f", "spec-decode", "finished"])
def test_sglang_jax_precompile_is_graph_capture(text):
    assert reads(text) == (False, None, "graph_capture")


# near misses: the server args naming the paddings, argparse's usage of the flags, another component's precompile
# (pathways_pd's per-bucket line, DFLASH's prefill), a user's prose about precompiling
@pytest.mark.parametrize("text", [
    f"{_STAMP}server_args=ServerArgs(precompile_token_paddings=[1024, 4096], precompile_bs_paddings=[1, 4, 8], "
    "disable_precompile=False)\n",
    "                        [--precompile-bs-paddings PRECOMPILE_BS_PADDINGS [PRECOMPILE_BS_PADDINGS ...]]\n"
    "                        [--disable-precompile]\n",
    f"{_STAMP}[pathways_pd] precompile bucket=4 done in 1.2s\n",
    f"{_STAMP}[DFLASH] Prefill precompile finished in 3 secs\n",
    "the worker begins to precompile for bs=32 and then hangs\n",
], ids=["server-args", "usage", "pathways-pd", "dflash", "prose"])
def test_other_precompile_texts_are_not_graph_capture(text):
    assert reads(text)[2] != "graph_capture"


# --- h83006: the launcher's warmup batch (disputed, ddlab unchanged) -----------------------------------------------

_UP = ("[2024-11-08 04:43:58] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)\n"
       '[2024-11-08 04:43:59] INFO:     127.0.0.1:41416 - "GET /get_model_info HTTP/1.1" 200 OK\n'
       "[2024-11-08 04:43:59 TP0] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, cache hit rate: "
       "0.00%, token usage: 0.00, #running-req: 0, #queue-req: 0\n")


def test_the_warmups_batch_before_ready_to_roll_is_ready_and_after_it_serving():
    assert reads(_UP)[2] == "ready"
    assert reads(_UP + "[2024-11-08 04:44:00] The server is fired up and ready to roll!\n" + _UP.splitlines()[-1]
                 + "\n")[2] == "serving"


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.3.5", "sglang/srt/server.py", 444, "target=_wait_and_warmup, args=(server_args, pipe_finish_writer)"),
    ("sglang", "0.3.5", "sglang/srt/server.py", 499, "def _wait_and_warmup(server_args, pipe_finish_writer):"),
    ("sglang", "0.3.5", "sglang/srt/server.py", 510, 'res = requests.get(url + "/get_model_info"'),
    ("sglang", "0.3.5", "sglang/srt/server.py", 538, 'json_data["text"] = "The capital city of France is"'),
    ("sglang", "0.3.5", "sglang/srt/server.py", 541, "for _ in range(server_args.dp_size):"),
    ("sglang", "0.3.5", "sglang/srt/server.py", 559, 'logger.info("The server is fired up and ready to roll!")'),
    ("sglang", "0.3.5", "sglang/srt/layers/sampler.py", 45,
     'logger.warning("Detected errors during sampling! NaN in the logits.")'),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
