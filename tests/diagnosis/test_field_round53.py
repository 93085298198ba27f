"""Held-out round 53 (issue 24): a traceback cut on the call that sets up the LoRA manager, read by a frame rule.

Round 53 (h53001-h53006; excerpts of issue threads and pull requests) was measured once on main at 0ea5b67 (with
the round's logs, deb1bbc: crashed 6/6, kind 6/6, phase 2/3); docs/diagnosis.md, "Held-out round 53", explains the
one miss. h53001 is SGLang 0.5.3.post1 inside AReaL (its frames' lines are that release's: scheduler.py:2934,
:446, tp_worker.py:95, model_runner.py:299, :418), a TP0 traceback cut on ``self.init_lora_manager()`` in
ModelRunner.initialize. The LoRA manager is set up right after load_model (:346) and before init_memory_pool
(:435), and its own frame already reads load_weights (crashes/frames.py, as h53002's does); the call's code line
now reads the same (its callee is on the stack), as a cut call of the graph setup reads graph_capture. A rule's
test reads the corpus log, a text written from the same source in another form (0.5.5's frames) and near misses
that must not read the same way (a request's adapter load while serving, a cut on the memory pool's call); the
positive tests fail on 0ea5b67. A line cited from a wheel is checked there where it is unpacked (skipped elsewhere).
"""

from __future__ import annotations

from fieldkit import REAL_MANIFEST, assert_at_line, real, reading, reads

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 53}

_RUNNER = "sglang/srt/model_executor/model_runner.py"
_SCHEDULER = "sglang/srt/managers/scheduler.py"
_TP_WORKER = "sglang/srt/managers/tp_worker.py"
_SITE = "/usr/local/lib/python3.12/dist-packages/"


def test_round53_is_folded_into_work_with_only_h53005_disputed_after_round_63():
    assert sorted(_ROUND) == [f"h5300{i}" for i in range(1, 7)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    # h53005's kind on round 63's second look (test_field_round63.py): the error went through the capture wrapper
    assert [i for i, log in sorted(_ROUND.items())
            if log.get("kind_disputed") or log.get("phase_disputed")] == ["h53005"]


# --- h53001: a traceback cut on the LoRA manager's set-up call ------------------------------------------------------

def test_a_cut_on_the_lora_managers_set_up_reads_load_weights():
    assert reading(real("h53001")) == (True, "unknown", "load_weights")
    # h53002, cut inside LoRAManager.init_state under init_lora_manager's frame, read so before the round
    assert reading(real("h53002")) == (True, "unknown", "load_weights")


def _lora_launch(*last: str) -> str:
    """0.5.5's chain: run_scheduler_process (scheduler.py:2802) over Scheduler.__init__'s TpModelWorker (:311),
    its ModelRunner (tp_worker.py:237) and ModelRunner.__init__'s initialize (model_runner.py:322), then ``last``."""
    sched, runner = _SITE + _SCHEDULER, _SITE + _RUNNER
    return ("[2025-11-20 10:00:00 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "{sched}", line 2802, in run_scheduler_process\n    scheduler = Scheduler(\n'
            f'  File "{sched}", line 311, in __init__\n    self.tp_worker = TpModelWorker(\n'
            f'  File "{_SITE + _TP_WORKER}", line 237, in __init__\n    self._model_runner = ModelRunner(\n'
            f'  File "{runner}", line 322, in __init__\n    self.initialize(min_per_gpu_memory)\n'
            + "".join(f"{line}\n" for line in last))


def test_another_releases_cut_on_the_call_reads_the_same():
    runner = _SITE + _RUNNER
    text = _lora_launch(f'  File "{runner}", line 454, in initialize', "    self.init_lora_manager()")
    assert reads(text) == (True, "unknown", "load_weights")


def test_a_requests_adapter_load_and_the_pools_call_are_not_this_set_up():
    # /load_lora_adapter while serving: the scheduler's dispatcher hands the request to the worker, which loads
    # the adapter through the manager (0.5.3.post1 managers/scheduler.py:2742, tp_worker.py:379,
    # model_runner.py:1234): a request's adapter, not the start-up's
    sched, worker, runner = _SITE + _SCHEDULER, _SITE + _TP_WORKER, _SITE + _RUNNER
    text = ("[2025-10-12 23:40:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "{sched}", line 2958, in run_scheduler_process\n    scheduler.event_loop_normal()\n'
            f'  File "{sched}", line 990, in event_loop_normal\n    self.process_input_requests(recv_reqs)\n'
            f'  File "{sched}", line 1285, in process_input_requests\n'
            "    output = self._request_dispatcher(recv_req)\n"
            f'  File "{sched}", line 2742, in load_lora_adapter\n'
            "    result = self.tp_worker.load_lora_adapter(recv_req)\n"
            f'  File "{worker}", line 379, in load_lora_adapter\n'
            "    result = self.model_runner.load_lora_adapter(recv_req.to_ref())\n"
            f'  File "{runner}", line 1234, in load_lora_adapter\n'
            "    result = self.lora_manager.load_lora_adapter(lora_ref)\n")
    assert reads(text)[2] != "load_weights"
    # a cut on the memory pool's call after the LoRA set-up (0.5.5 model_runner.py:471) is past the LoRA manager
    text = _lora_launch(f'  File "{runner}", line 471, in initialize', "    self.init_memory_pool(")
    assert reads(text)[2] != "load_weights"


def test_the_lora_manager_is_set_up_between_the_weights_and_the_pool():
    for line, text in ((2934, "scheduler = Scheduler("), (446, "self.tp_worker = TpModelWorker(")):
        assert_at_line("sglang", "0.5.3.post1", _SCHEDULER, line, text)
    assert_at_line("sglang", "0.5.3.post1", _TP_WORKER, 95, "self.model_runner = ModelRunner(")
    for line, text in ((299, "self.initialize(min_per_gpu_memory)"), (346, "self.load_model()"),
                       (418, "self.init_lora_manager()"), (435, "self.init_memory_pool("),
                       (1211, "self.lora_manager = LoRAManager("), (1234, "self.lora_manager.load_lora_adapter(")):
        assert_at_line("sglang", "0.5.3.post1", _RUNNER, line, text)
    assert_at_line("sglang", "0.5.3.post1", _SCHEDULER, 2742, "self.tp_worker.load_lora_adapter(recv_req)")
    assert_at_line("sglang", "0.5.4", _RUNNER, 446, "self.init_lora_manager()")
    for line, text in ((322, "self.initialize(min_per_gpu_memory)"), (454, "self.init_lora_manager()"),
                       (471, "self.init_memory_pool(")):
        assert_at_line("sglang", "0.5.5", _RUNNER, line, text)
    assert_at_line("sglang", "0.5.5", _SCHEDULER, 2802, "scheduler = Scheduler(")
    assert_at_line("sglang", "0.5.5", _TP_WORKER, 237, "self._model_runner = ModelRunner(")
