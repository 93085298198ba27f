"""What held-out round 49 of the vLLM corpus (w4901-w4906, measured once at a9e178e with its logs e09a454)
showed: crashed 5/6, kind 4/6, phase 3/4. Its two misses were read from the source (docs/diagnosis.md,
"Held-out round 49"):

- w4903: LMCache's MP connector on two TP workers, both "Registering kv caches!", then TP0's "WorkerProc hit
  an exception." and the excerpt ends. That message is the worker RPC loop's ``logger.exception`` (vllm 0.23.0
  v1/executor/multiproc_executor.py:987; :1223 in 0.34.0): one record whose traceback follows it, so the log
  was cut at the traceback's start, read as any cut traceback (crashed, unknown), as SGLang's "Scheduler hit
  an exception: " cut there already was ("WorkerProc failed." likewise). The registration line is a KV connector's, which vLLM calls only
  from initialize_kv_cache (gpu_model_runner.py:7340 (0.23.0); lmcache_mp_connector.py:555 there, LMCache's
  own copy logs the same words): a memory_pool phase line. Fixed: ``with_announced_traceback``
  (diagnosis/vllm_records.py) and the phase marker (diagnosis/vllm_log.py).
- w4905: the EAGLE-3 head's assertion "Expected logits to have shape (*, 128256), but got torch.Size([1,
  32000])". From 0.30.0 vLLM builds no draft-to-target map only where the draft's draft_vocab_size equals the
  target's vocabulary (llama_eagle3.py:339-345) and then asserts the logits are as wide as the head config's
  vocabulary (:379-382): it fails only for a draft made for another target, draft_incompatible as labelled
  (the PR's own run hit it through a vLLM bug, vllm-project/vllm#18909: said in the advice). Fixed:
  ``vllm_eagle3_logits_width`` (vllm_crashes/speculative.py).

The other four logs read as labelled.
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.vllm_log import vllm_phase_marker
from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, not_unpacked, read_log, reads, vllm_signature, vllm_traceback,
                      wheel_text_test)

_MANIFEST = VLLM_MANIFEST
_ROUND = [f"w49{n:02d}" for n in range(1, 7)]


def test_the_round_is_folded_with_its_six_logs():
    round49 = sorted(log_id for log_id, log in _MANIFEST.items() if log.get("heldout_round") == 49)
    assert round49 == _ROUND
    assert all(_MANIFEST[log_id]["split"] == "work" for log_id in round49)


def test_each_log_reads_as_labelled():
    """All six: crashed and kind as labelled, the phase where the log shows it (w4903 and w4905 since their
    rules)."""
    for log_id in _ROUND:
        log = _MANIFEST[log_id]
        got = reads(read_log(f"{log_id}.log"))
        kind = got[1] if got[0] or got[1] == "request_error" else None
        assert (got[0], kind) == (log["crashed"], log["kind"]), (log_id, got)
        if log["phase_in_log"]:
            assert got[2] == log["phase"], (log_id, got)


# --- w4903: a log that ends at the message of a logged exception --------------------------------------------

_WORKER = "(Worker_TP1 pid=4242) ERROR 03-02 08:15:00 [multiproc_executor.py:1223] "
_NIXL = ("(Worker_TP1 pid=4242) INFO 03-02 08:14:59 [worker.py:823] Registering KV_Caches. use_mla: False, "
         "kv_buffer_device: cuda, use_host_buffer: False\n")


def test_a_worker_cut_at_its_logged_exception_crashed_in_the_kv_setup():
    """The corpus log: TP0's "WorkerProc hit an exception." is its last line: crashed, unknown, memory_pool
    (the connectors' "Registering kv caches!" lines above it)."""
    assert reads(read_log("w4903.log")) == (True, "unknown", "memory_pool")


def test_the_same_cut_in_another_form():
    """Written from vLLM 0.23.0's sources: NIXL's registration line (nixl/worker.py:823), then a worker's
    announcement stamped as 0.34.0 stamps it (multiproc_executor.py:1223), the log ending there; and the worker
    main's "WorkerProc failed." (multiproc_executor.py:1097 (0.34.0)) after the first requests."""
    assert reads(_NIXL + _WORKER + "WorkerProc hit an exception.\n") == (True, "unknown", "memory_pool")
    serving = ("(APIServer pid=1) INFO 03-02 08:20:00 [loggers.py:224] Engine 000: Avg prompt throughput: 12.0 "
               "tokens/s, Avg generation throughput: 40.0 tokens/s\n"
               "(Worker_TP0 pid=78) ERROR 03-02 08:20:01 [multiproc_executor.py:1097] WorkerProc failed.\n")
    assert reads(serving) == (True, "unknown", "serving")


def test_an_announcement_with_its_traceback_or_before_more_lines_is_not_read_so():
    """Near misses: the message with its whole traceback is read by its exception (no second, cut chain);
    the message with lines after it (the engine going on) and the same words at INFO are no cut traceback."""
    whole = _NIXL + _WORKER + "WorkerProc hit an exception.\n" + vllm_traceback(
        ("vllm/v1/worker/gpu_model_runner.py", 7340, "initialize_kv_cache",
         "kv_transfer_group.register_kv_caches(kv_caches)"),
        exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
            "capacity of 79.11 GiB of which 1.02 GiB is free.", head=_WORKER)
    assert reads(whole)[:2] == (True, "cuda_oom")
    went_on = (_WORKER + "WorkerProc hit an exception.\n"
               "(APIServer pid=1) INFO 03-02 08:20:00 [loggers.py:224] Engine 000: Avg prompt throughput: 12.0 "
               "tokens/s, Avg generation throughput: 40.0 tokens/s\n")
    assert reads(went_on)[0] is False
    echoed = "(Worker_TP1 pid=4242) INFO 03-02 08:15:00 [probe.py:12] WorkerProc hit an exception.\n"
    assert reads(_NIXL + echoed)[0] is False


def test_the_kv_connectors_registration_lines_are_the_memory_pool():
    for line in ("LMCache INFO: Registering kv caches! (lmcache_mp_connector.py:749:lmcache.integration.vllm."
                 "lmcache_mp_connector)", "Registering kv caches", "Registering KV caches",
                 "Registering KV_Caches. use_mla: True"):
        assert vllm_phase_marker(line) == "memory_pool", line
    assert vllm_phase_marker("Registering the model's custom ops") is None


# --- w4905: an EAGLE-3 head's logits of another width --------------------------------------------------------

def test_the_eagle3_heads_logits_of_another_width_are_a_draft_that_does_not_fit():
    """The corpus log: the assertion's code line and its message, nothing else: draft_incompatible; a fault
    only drafting meets, shown with nothing of the startup: serving."""
    text = read_log("w4905.log")
    assert reads(text) == (True, "draft_incompatible", "serving")
    assert vllm_signature(text) == "vllm_eagle3_logits_width"


def test_the_same_assertion_in_another_form():
    """Written from vLLM 0.30.0: the proposer's greedy sample (v1/spec_decode/llm_base_proposer.py:451) into
    qwen3_eagle3.py's compute_logits (:353-356), a Qwen3 target's 151,936 against a 32,000-token head; the
    detail names both widths."""
    text = vllm_traceback(
        ("vllm/v1/spec_decode/llm_base_proposer.py", 451, "_greedy_sample",
         "return self.model.compute_logits(hidden_states).argmax(dim=-1)"),
        ("vllm/model_executor/models/qwen3_eagle3.py", 353, "compute_logits",
         "assert logits.shape[1] == self.config.vocab_size, ("),
        exc="AssertionError: Expected logits to have shape (*, 151936), but got torch.Size([8, 32000])")
    found = diagnose(text, family="vllm")
    assert (found.crashed, found.kind, found.signature) == (True, "draft_incompatible", "vllm_eagle3_logits_width")
    assert "32000 wide" in found.suggestion and "151936 tokens" in found.suggestion


def test_another_shape_assertion_is_not_the_drafts():
    """The near miss: a Kimi GDN layer's weight-shape assertion (model_executor/layers/mamba/gdn/
    kimi_gdn_linear_attn.py:60 (0.34.0)) is no draft against its target."""
    text = vllm_traceback(
        ("vllm/model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py", 60, "weight_loader",
         'f"Expected old A_log shape (1, 1, H, 1), got {loaded_weight.shape}"'),
        exc="AssertionError: Expected old A_log shape (1, 1, H, 1), got torch.Size([32])")
    assert vllm_signature(text) != "vllm_eagle3_logits_width"
    assert reads(text)[1] != "draft_incompatible"


test_each_rules_text_is_vllms_own = wheel_text_test([
    ("0.23.0", "vllm/v1/executor/multiproc_executor.py", 'logger.exception("WorkerProc hit an exception.")'),
    ("0.23.0", "vllm/v1/executor/multiproc_executor.py", 'logger.exception("WorkerProc failed.")'),
    ("0.34.0", "vllm/v1/executor/multiproc_executor.py", 'logger.exception("WorkerProc hit an exception.")'),
    ("0.23.0", "vllm/distributed/kv_transfer/kv_connector/v1/lmcache_mp_connector.py",
     'logger.info("Registering kv caches!")'),
    ("0.23.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/worker.py", '"Registering KV_Caches. use_mla: %s'),
    ("0.30.0", "vllm/model_executor/models/llama_eagle3.py", "self.draft_id_to_target_id = None"),
    ("0.34.0", "vllm/model_executor/models/qwen3_eagle3.py", '"Expected logits to have shape "'),
])


@pytest.mark.parametrize(("release", "path", "line", "code"), [
    ("0.23.0", "vllm/v1/executor/multiproc_executor.py", 987, 'logger.exception("WorkerProc hit an exception.")'),
    ("0.34.0", "vllm/v1/executor/multiproc_executor.py", 1223, 'logger.exception("WorkerProc hit an exception.")'),
    ("0.34.0", "vllm/v1/executor/multiproc_executor.py", 1097, 'logger.exception("WorkerProc failed.")'),
    ("0.23.0", "vllm/v1/worker/gpu_model_runner.py", 7340, "kv_transfer_group.register_kv_caches(kv_caches)"),
    ("0.23.0", "vllm/distributed/kv_transfer/kv_connector/v1/lmcache_mp_connector.py", 555,
     'logger.info("Registering kv caches!")'),
    ("0.30.0", "vllm/model_executor/models/llama_eagle3.py", 339,
     "if self.config.draft_vocab_size != target_vocab_size:"),
    ("0.30.0", "vllm/model_executor/models/llama_eagle3.py", 379,
     "assert logits.shape[1] == self.config.vocab_size, ("),
    ("0.34.0", "vllm/model_executor/models/llama_eagle3.py", 370,
     "assert logits.shape[1] == self.config.vocab_size, ("),
    ("0.9.1", "vllm/model_executor/models/llama_eagle3.py", 216,
     "assert logits.shape[1] == self.config.vocab_size, \\"),
    ("0.9.1", "vllm/model_executor/models/llama_eagle3.py", 195, "self.draft_id_to_target_id = nn.Parameter("),
])
def test_the_cited_lines(release, path, line, code):
    """The lines the rules cite (0.9.1's is the corpus log's own code line, the map built always there)."""
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert code in source.read_text().splitlines()[line - 1]
