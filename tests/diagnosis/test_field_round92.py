"""Held-out round 92 (issue 24): SGLang 0.1.x's misspelt KV-pool refusal is kv_pool_oom; an unpickling error
inside a socket's recv_pyobj is a message between processes, not a checkpoint; one label disputed.

Round 92 (h92001-h92015; issue bodies archived in yunwei37/vllm-exp) was measured once on main at b1d7f9f (with
the round's logs, 96a5d57): crashed 15/15, kind 12/15, phase 11/11. docs/diagnosis.md, "Held-out round 92", tells
the round.

- h92001, SGLang 0.1.13's router: "RuntimeError: Not enought memory. Please try to increase
  --mem-fraction-static." from init_memory_pool (0.1.13 sglang/srt/managers/router/model_runner.py:332; spelt so
  from 0.1.6 to 0.1.16, right from 0.1.18): the KV pool check, read as kv_pool_oom (crashes/kinds/memory.py).
  Ddlab's.
- h92013, the TokenizerManager's handle_loop dying of "_pickle.UnpicklingError: invalid load key, '\\x11'."
  raised in pyzmq's recv_pyobj (0.4.5.post2 sglang/srt/managers/tokenizer_manager.py:924; pyzmq 26.4.0
  zmq/_future.py:360): no checkpoint was read, so not weights_unreadable (crashes/kinds/weights.py
  _IPC_UNPICKLE); unknown, as labelled. Ddlab's.
- h92005, EAGLE with --enable-mixed-chunk (the thread's title) on SGLang 0.4.6, cuBLAS refusing the target's fp8
  matmul in forward_target_extend: the log names no second feature; disputed, unknown (0.4.7 server_args.py:428-433
  turns mixed chunk off under EAGLE, but only the title says it was on).

Each positive test fails on 96a5d57.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 92)


def test_round92_is_folded_into_work_with_one_dispute_and_no_miss_left():
    assert _IDS == [f"h920{n:02d}" for n in range(1, 16)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h92005"]
    assert REAL_MANIFEST["h92005"]["kind_disputed"] == ["spec_feature_conflict", "unknown"]
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "reading"), [
    ("h92001", (True, "kv_pool_oom", "memory_pool")),
    ("h92005", (True, "unknown", "serving")),
], ids=["h92001", "h92005-disputed"])
def test_the_rounds_misses_read_as_settled(log_id, reading):
    found = real(log_id)
    assert (found.crashed, found.kind if found.crashed else None, found.phase) == reading


# its phase is not in the log (the label's serving is a guess, not counted): crashed and the kind only
def test_h92013_reads_unknown_not_an_unreadable_checkpoint():
    found = real("h92013")
    assert (found.crashed, found.kind, found.signature) == (True, "unknown", None)


# --- h92001: SGLang 0.1.x's "Not enought memory" ---------------------------------------------------------------

_ROUTER = "/usr/lib/python3.10/site-packages/sglang/srt/managers/router"


def _router_traceback(message: str) -> str:
    return "\n".join([
        "Process Process-1:",
        "router init state: Traceback (most recent call last):",
        f'  File "{_ROUTER}/manager.py", line 68, in start_router_process',
        "    model_client = ModelRpcClient(server_args, port_args)",
        f'  File "{_ROUTER}/model_rpc.py", line 70, in exposed_init_model',
        "    self.model_runner = ModelRunner(",
        f'  File "{_ROUTER}/model_runner.py", line 272, in __init__',
        "    self.init_memory_pool(total_gpu_memory)",
        f'  File "{_ROUTER}/model_runner.py", line 331, in init_memory_pool',
        "    raise RuntimeError(",
        f"RuntimeError: {message}",
    ]) + "\n"


# the release's own text in its traceback, and as a line alone (a paste that kept only the error)
@pytest.mark.parametrize("text", [
    _router_traceback("Not enought memory. Please try to increase --mem-fraction-static."),
    "RuntimeError: Not enought memory. Please try to increase --mem-fraction-static.\n",
], ids=["traceback", "line-alone"])
def test_sglang_01s_misspelt_pool_refusal_is_kv_pool_oom(text):
    assert reads(text, family="sglang") == (True, "kv_pool_oom", "memory_pool")


# near miss: the misspelling in another message (no fraction, no KV cache, no pool named) is not the pool check
def test_a_misspelt_not_enough_memory_about_something_else_is_not_kv_pool_oom():
    text = _router_traceback("Not enought memory to build the prefill buffer.")
    assert reads(text, family="sglang")[1] != "kv_pool_oom"


# --- h92013: an IPC message that was not a pickle --------------------------------------------------------------

_SRT = "/sgl-workspace/sglang/python/sglang/srt"
_ZMQ = "/usr/local/lib/python3.10/dist-packages/zmq"
_TM_HEAD = [
    "[2025-04-21 22:11:12] TokenizerManager hit an exception: Traceback (most recent call last):",
    f'  File "{_SRT}/managers/tokenizer_manager.py", line 1169, in print_exception_wrapper',
    "    await func()",
    f'  File "{_SRT}/managers/tokenizer_manager.py", line 924, in handle_loop',
    "    recv_obj = await self.recv_from_detokenizer.recv_pyobj()",
]
_UNPICKLE = "_pickle.UnpicklingError: invalid load key, '\\x11'."


# pyzmq's asyncio socket (the log's), its plain socket, and a multiprocessing pipe's recv under another caller
@pytest.mark.parametrize("lines", [
    [*_TM_HEAD, f'  File "{_ZMQ}/_future.py", line 360, in _chain', "    loaded = load(buf)", _UNPICKLE],
    ["[2025-04-21 22:11:12 TP0] Scheduler hit an exception: Traceback (most recent call last):",
     f'  File "{_SRT}/managers/scheduler.py", line 811, in recv_requests',
     "    recv_req = self.recv_from_tokenizer.recv_pyobj(zmq.NOBLOCK)",
     f'  File "{_ZMQ}/sugar/socket.py", line 989, in recv_pyobj',
     "    return self._deserialize(msg, pickle.loads)",
     f'  File "{_ZMQ}/sugar/socket.py", line 830, in _deserialize',
     "    return load(recvd)",
     "_pickle.UnpicklingError: invalid load key, 'x'."],
    ["Traceback (most recent call last):",
     f'  File "{_SRT}/entrypoints/engine.py", line 640, in _launch_subprocesses',
     "    data = scheduler_pipe_readers[i].recv()",
     '  File "/usr/lib/python3.10/multiprocessing/connection.py", line 251, in recv',
     "    return _ForkingPickler.loads(buf.getbuffer())",
     "_pickle.UnpicklingError: pickle data was truncated"],
], ids=["zmq-asyncio", "zmq-sync", "multiprocessing-pipe"])
def test_an_unpickling_error_of_an_ipc_message_is_not_an_unreadable_checkpoint(lines):
    crashed, kind, _ = reads("\n".join(lines) + "\n", family="sglang")
    assert (crashed, kind) == (True, "unknown")


# near misses: a checkpoint's torch.load failing the same way, and a safetensors header, stay weights_unreadable
@pytest.mark.parametrize("lines", [
    ["Traceback (most recent call last):",
     f'  File "{_SRT}/model_loader/loader.py", line 378, in load_model',
     "    model.load_weights(self._get_all_weights(model_config, model))",
     f'  File "{_SRT}/model_loader/weight_utils.py", line 468, in pt_weights_iterator',
     '    state = torch.load(bin_file, map_location="cpu", weights_only=True)',
     '  File "/usr/local/lib/python3.10/dist-packages/torch/serialization.py", line 1040, in load',
     "    return _legacy_load(opened_file, map_location, pickle_module, **pickle_load_args)",
     "_pickle.UnpicklingError: invalid load key, 'v'."],
    ["Traceback (most recent call last):",
     f'  File "{_SRT}/model_loader/weight_utils.py", line 420, in safetensors_weights_iterator',
     '    with safe_open(st_file, framework="pt") as f:',
     "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge"],
], ids=["torch-load", "safetensors-header"])
def test_a_checkpoint_that_cannot_be_read_stays_weights_unreadable(lines):
    assert reads("\n".join(lines) + "\n", family="sglang")[:2] == (True, "weights_unreadable")


# --- the texts cited from wheels ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.1.13", "sglang/srt/managers/router/model_runner.py", 332,
     '"Not enought memory. " "Please try to increase --mem-fraction-static."'),
    ("sglang", "0.1.6", "sglang/srt/managers/router/model_runner.py", 311, '"Not enought memory. "'),
    ("sglang", "0.1.16", "sglang/srt/managers/router/model_runner.py", 354, '"Not enought memory. "'),
    ("sglang", "0.1.18", "sglang/srt/managers/controller/model_runner.py", 356,
     '"Not enough memory. Please try to increase --mem-fraction-static."'),
    ("sglang", "0.4.5.post2", "sglang/srt/managers/tokenizer_manager.py", 924,
     "recv_obj = await self.recv_from_detokenizer.recv_pyobj()"),
    ("sglang", "0.4.5.post2", "sglang/srt/managers/tokenizer_manager.py", 1173,
     "kill_process_tree(os.getpid(), include_parent=True)"),
    ("pyzmq", "26.4.0", "zmq/_future.py", 360, "loaded = load(buf)"),
    ("pyzmq", "26.4.0", "zmq/sugar/socket.py", 961, "def recv_pyobj(self, flags: int = 0) -> Any:"),
    ("sglang", "0.4.6", "sglang/srt/speculative/eagle_worker.py", 250, "if batch.forward_mode.is_decode():"),
    ("sglang", "0.4.6", "sglang/srt/speculative/eagle_worker.py", 275,
     "logits_output, next_token_ids, bid = self.forward_target_extend(batch)"),
    ("sglang", "0.4.6", "sglang/srt/managers/scheduler.py", 1307, "new_batch.mix_with_running(self.running_batch)"),
    ("sglang", "0.4.6", "sglang/srt/managers/schedule_batch.py", 1184, "self.forward_mode = ForwardMode.MIXED"),
    ("sglang", "0.4.6", "sglang/srt/server_args.py", 321, 'if self.speculative_algorithm in ("EAGLE", "EAGLE3"):'),
    ("sglang", "0.4.7", "sglang/srt/server_args.py", 428, "if self.enable_mixed_chunk:"),
    ("sglang", "0.4.7", "sglang/srt/server_args.py", 431, '"Mixed chunked prefill is disabled because of using "'),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
