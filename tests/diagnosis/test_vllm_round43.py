"""What held-out round 43 of the vLLM corpus (w4301-w4317, measured once at 1b007c4 with its logs 3bf66b9)
showed: crashed 17/17, kind 15/17, phase 9/10. Its three misses were read from vLLM's source (docs/diagnosis.md,
"Held-out round 43"):

- w4315: vllm-ascend under Ray, "ValueError: Current node has no NPU available. current_node_resource={...
  'GPU': 8.0}": vLLM's Ray executor refusing a node that offers no free device of the platform's Ray key
  (initialize_ray_cluster, vllm 0.7.2 executor/ray_utils.py:335-340, 0.10.2 :366-372, 0.18.0
  v1/executor/ray_utils.py:464-470; the key "NPU" on vllm-ascend, vllm_ascend/platform.py:52 (0.11.0rc0)):
  a launch the Ray cluster as started cannot satisfy, bad_argument at launch (backends.RAY_NODE_NO_DEVICE).
- w4316: "AttributeError: <function standalone_compile at 0x...> does not have the attribute
  'FakeTensorMode'": vLLM 0.18.0 patching torch's standalone_compile module by name
  (compilation/compiler_interface.py:375-379), which on Python 3.10 resolves to the function of that name;
  0.19.1 patches the module in sys.modules and says why (:375-386). A vLLM bug on a Python it supports, not
  a torch built for another vLLM: the kind dependency_mismatch is disputed (``kind_disputed``), ddlab's
  unknown kept.
- w4309: left a miss (phase): SkyRL's actor relaying "Engine core initialization failed" with its root cause
  cut, read at load_weights from another actor's "Starting to load model" lines.

Each rule is tested on the corpus log, on a text written from the source in another form, and on a near
miss that must not read the same way; every crashed log of the round is pinned to its signature.
"""

from __future__ import annotations

import pytest
from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_at_line, library_text_test, read_log, reads, vllm_signature,
                      vllm_traceback, wheel_text_test)

_MANIFEST = VLLM_MANIFEST
_ROUND = [f"w43{n:02d}" for n in range(1, 18)]
# left a miss: its phase (another actor's lines after the relayed failure; docs/diagnosis.md, "Held-out round 43")
_PHASE_MISSES = {"w4309"}

# the signature that reads each crashed log (None: an unknown death with no text of a kind)
_SIGNATURES = {
    "w4303": None,
    "w4304": None,
    "w4305": "vllm_engine_dead",
    "w4306": "vllm_engine_dead",
    "w4308": None,
    "w4309": "vllm_engine_dead",
    "w4310": None,
    "w4311": "vllm_capture_failed",
    "w4314": "vllm_tp_heads",
    "w4315": "vllm_ray_node_no_device",         # Ray offers no free device of the platform's key on the node
    "w4316": "vllm_engine_dead",                # the standalone_compile patch's AttributeError: kind disputed
    "w4317": None,
}


def test_the_round_is_folded_with_its_seventeen_logs():
    round43 = sorted(log_id for log_id, log in _MANIFEST.items() if log.get("heldout_round") == 43)
    assert round43 == _ROUND
    assert all(_MANIFEST[log_id]["split"] == "work" for log_id in round43)


def test_each_log_reads_as_labelled():
    """Crashed for all seventeen, the kind where it is not disputed, the phase where the log shows it
    (but the miss left)."""
    for log_id in _ROUND:
        log = _MANIFEST[log_id]
        got = reads(read_log(f"{log_id}.log"))
        assert got[0] == log["crashed"], log_id
        assert got[1] == (log["kind_disputed"][1] if "kind_disputed" in log else log["kind"]), log_id
        if log["phase_in_log"] and not log.get("phase_disputed") and log_id not in _PHASE_MISSES:
            assert got[2] == log["phase"], log_id


def test_each_crashed_log_is_read_by_its_signature():
    for log_id, signature in _SIGNATURES.items():
        assert vllm_signature(read_log(f"{log_id}.log")) == signature, log_id


# --- w4315: Ray offers no free device of the platform's key on the node vLLM starts from -------------------

_V0_RAY = [
    ("vllm/engine/multiprocessing/engine.py", 380, "run_mp_engine", "engine = MQLLMEngine.from_engine_args("),
    ("vllm/executor/ray_distributed_executor.py", 81, "_init_executor", "initialize_ray_cluster(self.parallel_config)"),
]


def test_a_node_ray_gives_no_device_is_the_launchs_cluster():
    """w4315 (wrapped over terminal lines, its resources 'GPU': 8.0 where vllm-ascend asks for 'NPU'), and the
    same refusal as vLLM 0.7.2's V0 engine writes it on a GPU node whose GPUs Ray does not offer."""
    assert reads(read_log("w4315.log")) == (True, "bad_argument", "launch")
    v0 = vllm_traceback(*_V0_RAY, ("vllm/executor/ray_utils.py", 336, "initialize_ray_cluster", "raise ValueError("),
                        exc="ValueError: Current node has no GPU available. current_node_resource={'CPU': 8.0, "
                            "'memory': 1e10}. vLLM engine cannot start without GPU. Make sure you have at least 1 GPU "
                            "available in a node current_node_id='ab' current_ip='10.1.2.3'.",
                        head="ERROR 04-18 14:47:42 engine.py:389] ")
    assert vllm_signature(v0) == "vllm_ray_node_no_device"
    assert reads(v0) == (True, "bad_argument", "launch")


def test_no_device_for_torch_or_a_placement_group_wait_is_not_the_nodes_refusal():
    """torch finding no CUDA device at all ("No CUDA GPUs are available") is not Ray's resources; the
    placement group's wait run out keeps its own signature (round 42)."""
    torch_none = vllm_traceback(("vllm/v1/worker/gpu_worker.py", 160, "init_device", "torch.cuda.set_device(self.device)"),
                                exc="RuntimeError: No CUDA GPUs are available",
                                head="(EngineCore_DP0 pid=12) ERROR 03-02 10:00:00 [core.py:708] ")
    assert vllm_signature(torch_none) != "vllm_ray_node_no_device"
    wait = vllm_traceback(*_V0_RAY, ("vllm/executor/ray_utils.py", 226, "_wait_until_pg_ready", "raise ValueError("),
                          exc="ValueError: Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0}, "
                              "{'GPU': 1.0}] within 1800 seconds. See `ray status` to make sure the cluster has "
                              "enough resources.", head="ERROR 04-18 14:47:42 engine.py:389] ")
    assert vllm_signature(wait) == "vllm_placement_devices"


# --- w4316: vLLM 0.18.0's patch of standalone_compile by name on Python 3.10 ---------------------------------

def test_the_standalone_compile_patch_is_disputed_and_read_unknown():
    """The label dependency_mismatch is disputed (a vLLM bug on Python 3.10, its second look citing the source);
    ddlab reads the engine's death with no kind."""
    log = _MANIFEST["w4316"]
    assert log["kind_disputed"] == ["dependency_mismatch", "unknown"] and "compiler_interface.py" in log["second_look"]
    assert reads(read_log("w4316.log"))[:2] == (True, "unknown")


test_each_rules_text_is_vllms_own = wheel_text_test([
    ("0.7.2", "vllm/executor/ray_utils.py", 'f"Current node has no {device_str} available. "'),
    ("0.10.2", "vllm/executor/ray_utils.py", 'f"Current node has no {device_str} available. "'),
    ("0.18.0", "vllm/v1/executor/ray_utils.py", 'f"Current node has no {device_str} available. "'),
    ("0.18.0", "vllm/compilation/compiler_interface.py", '"torch._inductor.standalone_compile.FakeTensorMode",'),
    ("0.19.1", "vllm/compilation/compiler_interface.py", "# because in Python <=3.10 the string-based patch() resolves"),
    ("0.19.1", "vllm/compilation/compiler_interface.py", 'sys.modules["torch._inductor.standalone_compile"],'),
])

test_each_rules_library_text_is_in_its_wheel = library_text_test([
    ("vllm_ascend", "0.11.0rc0", "vllm_ascend/platform.py", 'ray_device_key: str = "NPU"'),
])


def test_the_cited_lines_hold_the_texts():
    assert_at_line("vllm_ascend", "0.11.0rc0", "vllm_ascend/platform.py", 52, 'ray_device_key: str = "NPU"')
    for release, path, line, text in (
            ("0.7.2", "vllm/executor/ray_utils.py", 337, 'f"Current node has no {device_str} available. "'),
            ("0.10.2", "vllm/executor/ray_utils.py", 369, 'f"Current node has no {device_str} available. "'),
            ("0.18.0", "vllm/v1/executor/ray_utils.py", 466, 'f"Current node has no {device_str} available. "'),
            ("0.18.0", "vllm/compilation/compiler_interface.py", 377,
             '"torch._inductor.standalone_compile.FakeTensorMode",'),
            ("0.19.1", "vllm/compilation/compiler_interface.py", 377, "in Python <=3.10 the string-based patch()")):
        source = VLLM_WHEELS / release / path
        if not source.exists():
            pytest.skip(f"{source} is not unpacked")
        assert text in source.read_text().splitlines()[line - 1], (release, path, line)
