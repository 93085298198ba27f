"""Held-out round 114 (issue 24): folded into ``work``; its one miss, LoRA's batch prepared with no ids inside the
piecewise runner's capture, was the label's, disputed.

Round 114 (h114001-h114005; users' tracebacks and a start-up in sgl-project/sglang issues 25060, 25307, 29976 and PR
29600, read whole through a mirror of the closed threads' text) was measured once on main at ab93f958: crashed 5/5,
kind 4/5, phase 5/5. docs/diagnosis.md, "Held-out round 114", tells the round.

- h114005 (sgl-project/sglang#25307, a main checkout of 0.5.12's lines): Qwen3-0.6B with a LoRA adapter and
  --enforce-piecewise-cuda-graph; the piecewise runner's capture_one_batch_size makes dummy LoRA ids for the capture
  (0.5.12 model_executor/piecewise_cuda_graph_runner.py:557-560) but builds its ForwardBatch with lora_ids=None (:605)
  and hands it to prepare_lora_batch (:610-611), whose len(forward_batch.lora_ids) fails (lora/lora_manager.py:315).
  An error of the capture's own code while the capture is under way (capture() :519, under graph_capture() :493),
  inside enable_piecewise_cuda_graph() (:313), which logs it as 'Piecewise CUDA Graph failed with error' and re-raises
  it unchanged (compilation/piecewise_context_manager.py:42-53). 0.5.12 turns piecewise graphs off under LoRA
  (server_args.py:1332-1334) unless forced (:1302-1305, 'Used for testing', :6591-6593); the corpus has no kind for a
  graph x feature combination and reads errors of a forced piecewise capture's own code as cuda_graph_capture (h2b06,
  h71005; h30001). Kind unknown -> cuda_graph_capture, disputed; ddlab's reading (capture_error) stands, no code
  changed.
- Noticed in the round's review, fixed after it: the wrapper's own line with no traceback under it, logged while the
  log's last phase is the capture ("Capture piecewise CUDA graph begin", 0.5.12 model_runner.py:3077, no "ready to
  roll" yet), is the capture failing, not a replay (crashes/kinds/graphs.py piecewise_reading; no corpus log reads
  differently).
- h114001-h114004 read as labelled at the measurement: a scheduler's pickling error broadcasting requests, an NPU PD
  prefill rank's KV-pool IndexError under pipeline parallelism, PD priority scheduling's None * int (all unknown,
  serving), and the same PR's healthy PD start (ready).
"""

from __future__ import annotations

from collections import Counter

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, \
    folded_round, real, said

_IDS = folded_round(REAL_MANIFEST, 114)

# the signature each log is read by
_SIGNATURES = {
    "h114001": None,  # pickle.dumps of a received request in broadcast_pyobj: an SGLang bug, unknown, serving
    "h114002": None,  # an NPU KV pool's k_buffer[layer_id - start_layer] under PP: unknown, serving
    "h114003": None,  # the same PR's PD prefill start, warmup answered, 'ready to roll'
    "h114004": None,  # priority scheduling's None * int in PD prefill: unknown, serving
}


def test_round114_is_folded_into_work_with_one_dispute_and_none_left():
    assert _IDS == [f"h11400{n}" for n in range(1, 6)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h114005"]
    assert REAL_MANIFEST["h114005"]["kind_disputed"] == ["unknown", "cuda_graph_capture"]
    assert REAL_MANIFEST["h114005"]["second_look"]
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]
    assert Counter(REAL_MANIFEST[i]["kind"] for i in _IDS) == {"unknown": 4, None: 1}
    assert all(REAL_MANIFEST[i]["phase_in_log"] for i in _IDS)


@pytest.mark.parametrize("log_id", sorted(_SIGNATURES))
def test_round114_logs_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, _SIGNATURES[log_id])


def test_the_disputed_reads_as_its_second_look():
    found = real("h114005")
    assert (found.crashed, found.kind, found.phase, found.signature) == (
        True, "cuda_graph_capture", "graph_capture", "capture_error")


# --- h114005: LoRA's batch prepared inside the piecewise capture ---------------------------------------------------

_ROOT = "<sglang checkout>/python/sglang/srt/"


def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{_ROOT}{path}", line {line}, in {func}\n    {code}\n'


_NO_IDS = (_frame("lora/lora_manager.py", 315, "prepare_lora_batch",
                  "weight_indices = [0] * len(forward_batch.lora_ids)")
           + "TypeError: object of type 'NoneType' has no len()\n")
_CAPTURE = ("Traceback (most recent call last):\n"
            + _frame("model_executor/model_runner.py", 825, "initialize", "self.init_piecewise_cuda_graphs()")
            + _frame("model_executor/model_runner.py", 3084, "init_piecewise_cuda_graphs",
                     "self.piecewise_cuda_graph_runner = PiecewiseCudaGraphRunner(self)")
            + _frame("model_executor/piecewise_cuda_graph_runner.py", 357, "__init__", "self.capture()")
            + _frame("model_executor/piecewise_cuda_graph_runner.py", 519, "capture",
                     "self.capture_one_batch_size(num_tokens)")
            + _frame("model_executor/piecewise_cuda_graph_runner.py", 611, "capture_one_batch_size",
                     "self.model_runner.lora_manager.prepare_lora_batch(forward_batch)"))


# the capture's own dummy batch: an error while the capture is under way (ddlab's reading, the second look's)
def test_a_batch_error_of_the_capture_itself_is_the_captures():
    assert said(_CAPTURE + _NO_IDS, family="sglang") == (True, "cuda_graph_capture", "capture_error")


# near miss: the same TypeError of a served batch's LoRA preparation (the event loop's forward, no capture frames)
def test_the_same_error_while_serving_is_not_a_capture_failure():
    text = ("Scheduler hit an exception: Traceback (most recent call last):\n"
            + _frame("managers/scheduler.py", 1526, "event_loop_normal", "result = self.run_batch(batch)")
            + _frame("managers/scheduler.py", 2909, "run_batch",
                     "batch_result = self.model_worker.forward_batch_generation(")
            + _frame("model_executor/model_runner.py", 2500, "_forward_raw",
                     "self.lora_manager.prepare_lora_batch(forward_batch)")
            + _NO_IDS)
    assert said(text, family="sglang")[1] != "cuda_graph_capture"


# --- the wrapper's own line with no traceback under it (noticed in the round's review) -----------------------------

# enable_piecewise_cuda_graph() logs this line and re-raises (0.5.12 compilation/piecewise_context_manager.py:47-53);
# at startup it runs inside the runner's capture, after model_runner.py:3077's "Capture piecewise CUDA graph begin"
_STARTING = ("[2026-05-01 10:00:00] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=62.00 GB, "
             "mem usage=16.00 GB.\n"
             "[2026-05-01 10:00:21] KV Cache is allocated. #tokens: 400000, K size: 20.00 GB, V size: 20.00 GB\n"
             "[2026-05-01 10:00:22] Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB\n"
             "[2026-05-01 10:00:40] Capture cuda graph end. Time elapsed: 18.00 s. mem usage=1.00 GB. avail mem=19.00 "
             "GB.\n"
             "[2026-05-01 10:00:41] Capture piecewise CUDA graph begin. avail mem=19.00 GB\n")
_WRAPPER = ("[2026-05-01 10:00:50] Piecewise CUDA Graph failed with error: shape mismatch\n"
            "Piecewise CUDA Graph is enabled by default as an experimental feature.\n"
            "To work around this error, add --disable-piecewise-cuda-graph to your launch command.\n")


def test_the_wrappers_line_alone_while_the_capture_is_under_way_is_the_capture():
    assert said(_STARTING + _WRAPPER, family="sglang") == (True, "cuda_graph_capture", "piecewise_capture_failed")


# near miss: the same line after the server said it is ready and served a batch is a replay
def test_the_wrappers_line_alone_after_ready_stays_a_replay():
    served = (_STARTING + "[2026-05-01 10:01:00] The server is fired up and ready to roll!\n"
              "[2026-05-01 10:01:05] Prefill batch. #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: "
              "0.00, #running-req: 0, #queue-req: 0\n")
    assert said(served + _WRAPPER, family="sglang") == (True, "cuda_graph_replay", "piecewise_graph_failed")


# --- the lines cited from the wheels --------------------------------------------------------------------------------

_CITED = [
    ("sglang", "0.5.12", "sglang/srt/model_executor/model_runner.py", 825, "self.init_piecewise_cuda_graphs()"),
    ("sglang", "0.5.12", "sglang/srt/model_executor/model_runner.py", 3077,
     'f"Capture piecewise CUDA graph begin. avail mem={before_mem:.2f} GB"'),
    ("sglang", "0.5.12", "sglang/srt/model_executor/model_runner.py", 3084,
     "self.piecewise_cuda_graph_runner = PiecewiseCudaGraphRunner(self)"),
    ("sglang", "0.5.12", "sglang/srt/model_executor/piecewise_cuda_graph_runner.py", 313,
     "with enable_piecewise_cuda_graph():"),
    ("sglang", "0.5.12", "sglang/srt/model_executor/piecewise_cuda_graph_runner.py", 357, "self.capture()"),
    ("sglang", "0.5.12", "sglang/srt/model_executor/piecewise_cuda_graph_runner.py", 493,
     "graph_capture() as graph_capture_context,"),
    ("sglang", "0.5.12", "sglang/srt/model_executor/piecewise_cuda_graph_runner.py", 519,
     "self.capture_one_batch_size(num_tokens)"),
    ("sglang", "0.5.12", "sglang/srt/model_executor/piecewise_cuda_graph_runner.py", 560, "lora_ids = [None] * bs"),
    ("sglang", "0.5.12", "sglang/srt/model_executor/piecewise_cuda_graph_runner.py", 605, "lora_ids=None,"),
    ("sglang", "0.5.12", "sglang/srt/model_executor/piecewise_cuda_graph_runner.py", 611,
     "self.model_runner.lora_manager.prepare_lora_batch(forward_batch)"),
    ("sglang", "0.5.12", "sglang/srt/lora/lora_manager.py", 315, "weight_indices = [0] * len(forward_batch.lora_ids)"),
    ("sglang", "0.5.12", "sglang/srt/compilation/piecewise_context_manager.py", 47, "except Exception as e:"),
    ("sglang", "0.5.12", "sglang/srt/compilation/piecewise_context_manager.py", 49,
     '"Piecewise CUDA Graph failed with error: %s\\n%s",'),
    ("sglang", "0.5.12", "sglang/srt/compilation/piecewise_context_manager.py", 53, "raise"),
    ("sglang", "0.5.12", "sglang/srt/server_args.py", 1303, "if self.enforce_piecewise_cuda_graph:"),
    ("sglang", "0.5.12", "sglang/srt/server_args.py", 1332, "# 7. LoRA"),
    ("sglang", "0.5.12", "sglang/srt/server_args.py", 1334, "self.disable_piecewise_cuda_graph = True"),
    ("sglang", "0.5.12", "sglang/srt/server_args.py", 6593,
     'help="Enforce piecewise cuda graph, skipping all auto-disable conditions. Used for testing.",'),
]


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), _CITED,
                         ids=[f"{k}-{r}:{p}:{n}" for k, r, p, n, _ in _CITED])
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
