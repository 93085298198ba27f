"""Held-out round 88 (issue 24): srun's task label peeled; the weight-update handlers' frames are serving.

Round 88 (h88001-h88007; logs from public threads) was measured once on main at 9fe3644 (with the round's logs,
ea6c967): crashed 7/7, kind 7/7, phase 6/7. docs/diagnosis.md, "Held-out round 88", tells the round. The one miss
was ddlab's:

- h88001, a Slurm job's TP8 server: every line carries srun --label's task label "0: " (SchedMD/slurm
  src/common/write_labelled_message.c, _write_label: ``"%0*d: "``), and TP0's "Scheduler hit an exception" runs
  through model_runner.py's init_weights_update_group into the update group's barrier, a DistBackendError while
  retrieving the NCCL unique id. The label hid the traceback's frames (diagnosis/viewer_prefixes.py
  peel_task_label peels it), and the weight-update handlers are dispatched by the scheduler from an API request
  once the server serves (0.4.3.post2 sglang/srt/managers/scheduler.py:425-431, :1679-1681 -> tp_worker.py:187-188
  -> model_executor/model_runner.py:436, the barrier :475; 0.5.12 scheduler_update_weights_mixin.py:70 ->
  tp_worker.py:105 -> model_runner.py:1921): their frames are serving (crashes/frames.py _WEIGHT_UPDATE).

Each positive test fails on ea6c967.
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.viewer_prefixes import peel_task_label
from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, disputed, folded_round, reads, real

_IDS = folded_round(REAL_MANIFEST, 88)


def test_round88_is_folded_into_work_with_nothing_disputed():
    assert _IDS == [f"h880{n:02d}" for n in range(1, 8)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


def test_h88001_reads_nccl_while_serving():
    found = real("h88001")
    assert (found.crashed, found.kind, found.phase) == (True, "nccl", "serving")


# --- h88001: the weight-update group's barrier, under srun's label -------------------------------------------------

_SRT = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
_TORCH = "/usr/local/lib/python3.10/dist-packages/torch/distributed"
_ERROR = ("torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from "
          "[0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer")
_HEAD = "[2025-03-05 03:55:55 TP0] Scheduler hit an exception: Traceback (most recent call last):"


def _frame(path: str, line: int, func: str, code: str, root: str = _SRT) -> list[str]:
    return [f'  File "{root}/{path}", line {line}, in {func}', f"    {code}"]


_RUNNER = "model_executor/model_runner.py"
_BARRIER = (_frame("c10d_logger.py", 83, "wrapper", "return func(*args, **kwargs)", _TORCH)
            + _frame("distributed_c10d.py", 4159, "barrier", "work = group.barrier(opts=opts)", _TORCH))
# 0.4.3.post2: scheduler.py:1681 -> tp_worker.py:188 -> model_runner.py:475 (the barrier)
_V043 = (_frame("managers/scheduler.py", 1681, "init_weights_update_group",
                "success, message = self.tp_worker.init_weights_update_group(recv_req)")
         + _frame("managers/tp_worker.py", 188, "init_weights_update_group",
                  "success, message = self.model_runner.init_weights_update_group(")
         + _frame(_RUNNER, 475, "init_weights_update_group",
                  "dist.barrier(group=self._model_update_group, device_ids=[rank])") + _BARRIER)
# 0.5.12: scheduler_update_weights_mixin.py:70 -> tp_worker.py:105 -> model_runner.py:1954 (the group's creation)
_V0512 = (_frame("managers/scheduler_update_weights_mixin.py", 70, "init_weights_update_group",
                 "success, message = self.tp_worker.init_weights_update_group(recv_req)")
          + _frame("managers/tp_worker.py", 105, "init_weights_update_group",
                   "success, message = self.model_runner.init_weights_update_group(")
          + _frame(_RUNNER, 1954, "init_weights_update_group",
                   "self._model_update_group[group_name] = init_custom_process_group(") + _BARRIER)
# update_weights_from_distributed's broadcast (0.4.3.post2 model_runner.py:502)
_DISTRIBUTED = (_frame(_RUNNER, 502, "update_weights_from_distributed",
                       "torch.distributed.broadcast(weights, src=0, group=self._model_update_group)") + _BARRIER)


def _labelled(lines: list[str], label: str = "0: ") -> str:
    return "".join(f"{label}{line}\n" for line in lines)


# the 0.4.3.post2 frames under srun's label and bare, 0.5.12's under a two-digit label (a job of ten tasks or
# more), update_weights_from_distributed's frame
@pytest.mark.parametrize("text", [
    _labelled([_HEAD, *_V043, _ERROR]),
    _labelled([_HEAD, *_V043, _ERROR], label=""),
    _labelled(["[2025-03-05 03:55:50 TP0] Load weight end. type=LlamaForCausalLM, avail mem=60.1 GB",
               _HEAD, *_V0512, _ERROR], label="03: "),
    _labelled([_HEAD, *_DISTRIBUTED, _ERROR]),
], ids=["0.4.3-srun-label", "0.4.3-bare", "0.5.12-two-digit-label", "update-from-distributed"])
def test_a_weight_update_groups_failure_is_serving(text):
    assert reads(text, family="sglang") == (True, "nccl", "serving")


_START = (_frame(_RUNNER, 262, "init_torch_distributed",
                 "initialize_model_parallel(tensor_model_parallel_size=self.tp_size)")
          + _BARRIER)


_DISK = (_frame(_RUNNER, 363, "update_weights_from_disk", "model = model_load_weights(self.model, iter)")
         + _frame(_RUNNER, 402, "model_load_weights", "model.load_weights(iter)")
         + _frame("models/llama.py", 484, "load_weights", "weight_loader(param, loaded_weight)"))


# near misses: the start-up's own distributed init under the label (its frames say launch), update from disk
# through the model's load_weights (a loader frame still wins below it)
@pytest.mark.parametrize(("text", "phase"), [
    (_labelled([_HEAD, *_START, _ERROR]), "launch"),
    (_labelled([_HEAD, *_DISK, _ERROR]), "load_weights"),
], ids=["startup-init", "update-from-disk"])
def test_other_frames_keep_their_phase(text, phase):
    assert reads(text, family="sglang")[2] == phase


# labels that are not srun's are kept: numbered lines of a paste's own (no traceback's or stamped line after a
# label), labels of two widths, a label on too few of the lines
@pytest.mark.parametrize("raws", [
    ["1: load the model", "2: start the server", "3: send a request"],
    ["0: " + _HEAD, "01: " + _V043[0], "0: " + _ERROR],
    ["0: " + _HEAD, _V043[0], _V043[1], _ERROR],
], ids=["numbered-lines", "two-widths", "too-few"])
def test_other_numbers_before_lines_are_kept(raws):
    assert peel_task_label(raws) == raws


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.4.3.post2", "managers/scheduler.py", 426, "(InitWeightsUpdateGroupReqInput, self.init_weights_update_group),"),
    ("0.4.3.post2", "managers/scheduler.py", 1679, "def init_weights_update_group(self, recv_req:"),
    ("0.4.3.post2", "managers/scheduler.py", 1681, "success, message = self.tp_worker.init_weights_update_group("),
    ("0.4.3.post2", "managers/tp_worker.py", 188, "success, message = self.model_runner.init_weights_update_group("),
    ("0.4.3.post2", _RUNNER, 363, "def update_weights_from_disk("),
    ("0.4.3.post2", _RUNNER, 402, "model.load_weights(iter)"),
    ("0.4.3.post2", _RUNNER, 436, "def init_weights_update_group("),
    ("0.4.3.post2", "models/llama.py", 484, "weight_loader(param, loaded_weight)"),
    ("0.4.3.post2", _RUNNER, 475, "dist.barrier(group=self._model_update_group, device_ids=[rank])"),
    ("0.4.3.post2", _RUNNER, 262, "initialize_model_parallel(tensor_model_parallel_size=self.tp_size)"),
    ("0.4.3.post2", _RUNNER, 482, "def update_weights_from_distributed(self, name, dtype, shape):"),
    ("0.4.3.post2", _RUNNER, 502, "torch.distributed.broadcast(weights, src=0, group=self._model_update_group)"),
    ("0.4.3.post2", _RUNNER, 515, "def update_weights_from_tensor("),
    ("0.4.3.post2", "entrypoints/http_server.py", 276, '@app.post("/init_weights_update_group")'),
    ("0.5.12", "managers/scheduler_update_weights_mixin.py", 70,
     "success, message = self.tp_worker.init_weights_update_group(recv_req)"),
    ("0.5.12", "managers/tp_worker.py", 105, "success, message = self.model_runner.init_weights_update_group("),
    ("0.5.12", _RUNNER, 1921, "def init_weights_update_group("),
    ("0.5.12", _RUNNER, 1954, "self._model_update_group[group_name] = init_custom_process_group("),
    ("0.5.12", _RUNNER, 1980, "def update_weights_from_distributed("),
    ("0.5.12", _RUNNER, 2070, "def update_weights_from_tensor("),
    ("0.5.12", "entrypoints/http_server.py", 1136, '@app.post("/init_weights_update_group")'),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(release, path, line, text):
    assert_at_line("sglang", release, f"sglang/srt/{path}", line, text)
