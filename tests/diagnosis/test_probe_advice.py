"""A graph crash's suggestion names the exact ``--probe`` to add next time (issue 13).

The field's replay crash said nothing of which forward-batch field was None;
a probe on the innermost server method on the crash's path says. Replay: the
method the batch was handed to. Capture: its calls carry no batch, so the
innermost method a graph runner called on itself. Checked on the real SGLang
tracebacks of tests/fixtures/logs/sglang (0.4.10.post2, 0.5.10, 0.5.23); the
0.5.23 names are methods of that release (decode_cuda_graph_runner.py:251
``class DecodeCudaGraphRunner``, :1368 ``capture_one_shape``, :1908
``_copy_replay_inputs``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.probe_advice import probe_target
from ddlab.diagnosis.tracebacks import find_chains
from ddlab.diagnosis.logtext import split_lines

SGLANG = Path(__file__).parent.parent / "fixtures" / "logs" / "sglang"
RUNNER_0_5_23 = "sglang.srt.model_executor.runner.decode_cuda_graph_runner.DecodeCudaGraphRunner"
RUNNER_0_4 = "sglang.srt.model_executor.cuda_graph_runner.CudaGraphRunner"

CASES = [
    ("cuda_graph_capture__0.5.23__capture-failed-oom.log", f"{RUNNER_0_5_23}.capture_one_shape"),
    ("cuda_graph_capture__0.4.10.post2__capture-failed-oom.log",
     f"{RUNNER_0_4}.capture_one_batch_size"),
    ("cuda_graph_replay__0.5.23__nonetype-copy-replay-inputs.log",
     f"{RUNNER_0_5_23}._copy_replay_inputs"),
    ("cuda_graph_replay__0.4.10.post2__nonetype-copy-replay-prepare.log",
     f"{RUNNER_0_4}.replay_prepare"),
    ("cuda_graph_replay__0.5.10__nonetype-grouped-foreach-copy.log", f"{RUNNER_0_4}.replay_prepare"),
]


@pytest.mark.parametrize("name, target", CASES, ids=[c[0].split("__")[1] + "-" + c[0].split("__")[0]
                                                     for c in CASES])
def test_a_graph_crash_suggests_the_probe_on_its_path(name, target):
    d = diagnose((SGLANG / name).read_text(encoding="utf-8"))
    assert d.kind in ("cuda_graph_capture", "cuda_graph_replay")
    probes = re.findall(r"--probe-fn (\S+)", d.suggestion or "")
    assert probes == [target], d.suggestion


def _frames(text: str):
    chains = find_chains(split_lines(text))
    return chains[-1].frames


def test_no_server_method_no_probe():
    text = """Traceback (most recent call last):
  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner
    self.run()
  File "/usr/lib/python3.11/threading.py", line 982, in run
    self._target(*self._args, **self._kwargs)
RuntimeError: boom
"""
    assert probe_target(_frames(text)) is None


def test_a_capture_probe_is_a_runner_method_called_on_itself_not_a_model_layer():
    """The capture path goes on into the model (qwen3.forward, the logits processor): a
    probe there would fire on every forward; the runner's own method is the one to watch."""
    text = (SGLANG / "cuda_graph_capture__0.5.23__capture-failed-oom.log").read_text()
    target = probe_target(_frames(text))
    assert target.endswith("DecodeCudaGraphRunner.capture_one_shape")
    assert "models" not in target and "logits" not in target


def test_a_probe_whose_path_resolves_nowhere_is_said_not_armed_with_the_closest():
    """Issue 23 item 8: a typo'd --probe-fn left the verdict silent (the suggestion even
    proposed the same probe again), though the log held the hook's `missing` record with
    the closest path; now the suggestion and the facts say it saw nothing, and name it."""
    typo = f"{RUNNER_0_5_23}._copy_replay_inputz"
    closest = f"{RUNNER_0_5_23}._copy_replay_inputs"
    record = {"pid": 7, "rank": 0, "target": typo, "mode": "error", "event": "missing",
              "call": None, "closest": closest,
              "error": {"type": "AttributeError", "message": f"{RUNNER_0_5_23} has no attribute "
                        f"'_copy_replay_inputz'; did you mean {closest}?"}}
    crash = (SGLANG / "cuda_graph_replay__0.5.23__nonetype-copy-replay-inputs.log").read_text(
        encoding="utf-8")
    import json

    text = f"[2026-12-02 06:00:00] DDLAB_PROBE {json.dumps(record)}\n" + crash
    d = diagnose(text)
    said = d.facts["probes_not_armed"]
    assert said == [f"probe {typo} is not armed: it saw nothing ({RUNNER_0_5_23} has no "
                    f"attribute '_copy_replay_inputz'); did you mean {closest}? deploy again "
                    f"with --probe-fn {closest}"], said
    assert d.suggestion.startswith(said[0]), d.suggestion
    ready = diagnose(f"DDLAB_PROBE {json.dumps(record)}\nThe server is fired up and ready to roll!")
    assert ready.facts["probes_not_armed"] == said, "said whether it crashed or not"
