"""Held-out round 104 (issue 24): speculative verify on a sliding-window model under FlashInfer; SGLang's capture bar
under vLLM's import notices.

Round 104 (h104001-h104007; users' own log repositories) was measured once on main at 3cafdf3c: crashed 7/7, kind
6/7, phase 4/5. docs/diagnosis.md, "Held-out round 104", tells the round. The two misses were ddlab's:

- h104001 (jethac/dgx-spark-hijinks, SGLang 0.5.11 from a source checkout, Gemma-4 with a FROZEN_KV_MTP drafter):
  the scheduler dies in the drafter's verify, the target's forward_extend, FlashInfer's update_sliding_window:
  "TypeError: unsupported operand type(s) for -: 'Tensor' and 'NoneType'". The release builds a target-verify
  batch's prefill metadata with prefix_lens=None (0.5.12 layers/attention/flashinfer_backend.py:470) and the
  sliding-window updater subtracts it (:1317): speculative decoding meeting the model's sliding-window layers on
  FlashInfer, spec_feature_conflict (a feature of its own, crashes/kinds/speculative.py).
- h104007 (Luoxiaogan/sglang_CUSTOM): a launch at warning log level whose only lines are vLLM's import notices
  (SGLang imports vLLM), the loader's shard bars and SGLang's capture bar "Capturing batches (avail_mem=N GB)"
  (0.4.7.post1 model_executor/cuda_graph_runner.py:403), which no vLLM release writes: read as vLLM's log, its
  phase reader did not know the bar. The bar is SGLang's mark now (diagnosis/vllm_log.py): graph_capture.
Each positive test fails on the staged commit (18d28805's lib).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.vllm_log import detect_family
from fieldkit import KNOWN_MISSES, REAL, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, \
    folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 104)


def test_round104_is_folded_into_work_with_nothing_disputed_and_none_left():
    assert _IDS == [f"h1040{n:02d}" for n in range(1, 8)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


@pytest.mark.parametrize(("log_id", "signature"), [("h104001", "spec_feature_conflict"), ("h104007", None)],
                         ids=["h104001", "h104007"])
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


def test_h104007_reads_at_graph_capture():
    assert real("h104007").phase == "graph_capture"


# --- h104001: a verify batch on a sliding-window model under FlashInfer ---------------------------------------------

_ROOT = "/usr/local/lib/python3.12/dist-packages/sglang/srt/"


def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{_ROOT}{path}", line {line}, in {func}\n    {code}\n'


_HEAD = ("[2026-06-12 03:45:59] Scheduler hit an exception: Traceback (most recent call last):\n"
         + _frame("managers/scheduler.py", 3127, "run_batch",
                  "batch_result = self.model_worker.forward_batch_generation("))
_VERIFY = {
    "frozen-kv-mtp": _frame("speculative/frozen_kv_mtp_worker.py", 444, "forward_batch_generation",
                            "verify_output = self.verify(batch)")
    + _frame("speculative/frozen_kv_mtp_worker.py", 763, "verify",
             "batch_result = self.target_worker.forward_batch_generation("),
    "eagle": _frame("speculative/eagle_worker.py", 300, "forward_batch_generation",
                    "logits_output, verify_output, model_worker_batch, _ = self.verify(batch, spec_info)")
    + _frame("speculative/eagle_worker.py", 780, "verify",
             "batch_result = self.target_worker.forward_batch_generation("),
}
_TAIL = (_frame("managers/tp_worker.py", 472, "forward_batch_generation", "out = self.model_runner.forward(")
         + _frame("model_executor/model_runner.py", 3727, "forward_extend",
                  "self.attn_backend.init_forward_metadata(forward_batch)")
         + _frame("layers/attention/flashinfer_backend.py", 470, "init_forward_metadata",
                  "self.indices_updater_prefill.update(")
         + _frame("layers/attention/flashinfer_backend.py", 1317, "update_sliding_window",
                  "torch.tensor(self.sliding_window_size) + seq_lens - prefix_lens,")
         + "TypeError: unsupported operand type(s) for -: 'Tensor' and 'NoneType'\n")


# the FROZEN_KV_MTP drafter's verify (h104001's), EAGLE's
@pytest.mark.parametrize("verify", list(_VERIFY), ids=list(_VERIFY))
def test_a_verify_in_flashinfers_sliding_window_updater_is_a_spec_feature_conflict(verify):
    found_reading = reads(_HEAD + _VERIFY[verify] + _TAIL, family="sglang")
    assert found_reading[:2] == (True, "spec_feature_conflict")


# near miss: the same error in the sliding-window updater with no speculative frame (a plain extend) is no conflict
def test_the_sliding_window_updater_without_a_speculative_frame_is_no_spec_feature_conflict():
    assert reads(_HEAD + _TAIL, family="sglang")[1] != "spec_feature_conflict"


# --- h104007: SGLang's capture bar under vLLM's import notices ------------------------------------------------------

_NOTICES = "".join(f"INFO 06-20 12:35:{n:02d} [__init__.py:239] Automatically detected platform cuda.\n"
                   for n in range(10, 30))
_SHARDS = "Loading safetensors checkpoint shards: 100% Completed | 2/2 [00:02<00:00,  1.10s/it]\n"


def _bars(desc: str) -> str:
    return "".join(f"{desc}:  {p}%|          | {n}/23 [00:01<00:07,  2.70it/s]\n"
                   for n, p in ((1, 4), (2, 9), (3, 13), (4, 17), (5, 22), (6, 26), (7, 30), (8, 35)))


# 0.4.7's desc (h104007's), 0.4.10.post2's and 0.5.x's ("bs=N avail_mem=...")
@pytest.mark.parametrize("desc", ["Capturing batches (avail_mem=45.36 GB)",
                                  "Capturing batches (bs=8 avail_mem=45.36 GB)"], ids=["0.4.7", "0.4.10"])
def test_sglangs_capture_bar_under_vllms_import_notices_is_sglangs_graph_capture(desc):
    text = _NOTICES + _SHARDS + _bars(desc)
    assert detect_family(text) == "sglang"
    assert reads(text) == (False, None, "graph_capture")


# near misses: vLLM's own capture bar (V0's "Capturing CUDA graph shapes", V1's "Capturing CUDA graphs (...)")
# under the same notices stays vLLM's
@pytest.mark.parametrize("desc", ["Capturing CUDA graph shapes",
                                  "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)"], ids=["v0", "v1"])
def test_vllms_capture_bar_stays_vllms(desc):
    assert detect_family(_NOTICES + _SHARDS + _bars(desc)) == "vllm"


def test_h104007_ends_in_the_capture_bar_with_no_error():
    lines = (REAL / "h104007.log").read_text(encoding="utf-8").splitlines()
    assert lines[-1].startswith("Capturing batches (avail_mem=44.76 GB): 100%")
    assert not [ln for ln in lines if "Traceback" in ln or "Error" in ln]


# --- the lines cited from the wheels --------------------------------------------------------------------------------
# 0.5.11 (h104001's release) was read from its wheel (pip download --no-deps sglang==0.5.11); 0.5.12, unpacked here,
# has the same code

_CITED = [
    ("sglang", "0.5.12", "sglang/srt/layers/attention/flashinfer_backend.py", 464,
     "elif forward_batch.forward_mode.is_target_verify():"),
    ("sglang", "0.5.12", "sglang/srt/layers/attention/flashinfer_backend.py", 470, "prefix_lens=None,"),
    ("sglang", "0.5.12", "sglang/srt/layers/attention/flashinfer_backend.py", 1297, "def update_sliding_window("),
    ("sglang", "0.5.12", "sglang/srt/layers/attention/flashinfer_backend.py", 1317,
     "torch.tensor(self.sliding_window_size) + seq_lens - prefix_lens,"),
    ("sglang", "0.4.7.post1", "sglang/srt/model_executor/cuda_graph_runner.py", 403,
     'f"Capturing batches ({avail_mem=:.2f} GB)"'),
    ("sglang", "0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py", 480,
     'f"Capturing batches ({bs=} {avail_mem=:.2f} GB)"'),
    ("sglang", "0.5.10", "sglang/srt/model_executor/cuda_graph_runner.py", 784,
     'f"Capturing batches ({bs=} {avail_mem=:.2f} GB)"'),
]


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), _CITED,
                         ids=[f"{k}-{r}:{p}:{n}" for k, r, p, n, _ in _CITED])
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
