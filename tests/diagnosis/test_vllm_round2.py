"""The rules that round 2 of the vLLM corpus (vc01-vc31, measured once) showed missing.

Each rule is general and cited from vLLM's wheels (0.6.4.post1, 0.30.0, 0.33.0, 0.34.0) or from
the writer of the text (bash, CPython): the round-2 log that showed it is one case, a text written
from the source in another release's form or a neighbouring case is the other. SGLang's reading
of every SGLang log is unchanged (test_vllm_diagnosis.test_every_sglang_log_is_read_as_sglang and
the SGLang corpus floors).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.signatures import VLLM_SIGNATURES
from ddlab.diagnosis.vllm_log import detect_family
from fieldkit import VLLM_REAL, VLLM_WHEELS, read_log, said


# --- which family wrote it: texts only vLLM writes -------------------------------------

@pytest.mark.parametrize("line", [
    # pydantic's header for vLLM's top config class (vllm/config/vllm.py)
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig",
    # the V2 model runner's refusal (vllm/config/vllm.py:3087 (0.30.0))
    "Value error, Model Runner V2 does not yet support: ngram/ngram_gpu speculative decoding",
    # the dtype check (vllm/platforms/cuda.py:692 (0.34.0))
    "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla "
    "T4 GPU has compute capability 7.5.",
    # the offline LLM's progress bar (vllm/entrypoints/common/offline.py:601, :603 (0.34.0))
    "Processed prompts: 100%|██████| 8/8 [00:01<00:00, 5.1it/s, est. speed input: 51.2 toks/s, output: 80.3 toks/s]",
    # the startup memory check (vllm/v1/worker/utils.py:790 (0.34.0))
    "ValueError: Free memory on device cuda:0 (20.0/79.19 GiB) on startup is less than the engine's budget",
    # vLLM's environment variables (vllm/envs.py)
    "VLLM_USE_V1=1 python examples/offline_inference/spec_decode.py --method suffix",
    # a frame in the installed package, whatever its module
    '  File "/usr/lib/python3/site-packages/vllm/utils.py", line 572, in get_open_port',
], ids=["VllmConfig", "model-runner-v2", "bf16", "processed-prompts", "free-memory", "env",
        "site-packages"])
def test_texts_only_vllm_writes_mark_the_family(line):
    assert detect_family(line) == "vllm"
    assert detect_family("\n".join([line, "[2026-12-03 10:00:00] server_args=ServerArgs(model_path='m')"])) == "sglang"


def test_round2_one_liners_are_read_as_vllm():
    assert said(read_log(VLLM_REAL / "vc12.log")) == (True, "bad_argument", "vllm_config_invalid")
    assert said(read_log(VLLM_REAL / "vc29.log")) == (True, "unsupported_gpu", "vllm_bf16_gpu")
    healthy = diagnose(read_log(VLLM_REAL / "vc21.log"))  # an offline generate to 100 %: serving
    assert (healthy.family, healthy.crashed, healthy.phase) == ("vllm", False, "serving")


# --- the startup check of free GPU memory --------------------------------------------

_FREE_034 = ("(EngineCore_DP0 pid=311) ERROR 12-03 10:00:01 [core.py:1110] ValueError: Free memory on device "
             "cuda:0 (60.12/79.19 GiB) on startup is less than desired GPU memory utilization (0.9, 71.27 GiB). "
             "Decrease GPU memory utilization or reduce GPU memory used by other processes.")
_FREE_EXTERNAL = ("ValueError: Free memory on device cuda:0 (20.0/79.19 GiB) on startup is less than the "
                  "engine's budget after excluding external process's weights (0.9, 40.0 GiB). Decrease GPU "
                  "memory utilization or reduce GPU memory used by other processes.")


@pytest.mark.parametrize("text, share", [
    (read_log(VLLM_REAL / "vc15.log"), "0.79"),   # 3.22 of 4.0 GiB free: at most 0.80, less a margin
    (read_log(VLLM_REAL / "vc16.log"), "0.65"),   # 31.44 of 47.38 GiB
    (_FREE_034, "0.74"),                  # 0.34.0's form names the device
    (_FREE_EXTERNAL, None),               # the external-weights variant: no single share to give
], ids=["vc15", "vc16", "0.34.0", "external-weights"])
def test_free_memory_below_the_share_at_startup_is_cuda_oom_with_lower_utilization(text, share):
    found = diagnose(text)
    assert (found.crashed, found.kind, found.signature, found.phase) == (
        True, "cuda_oom", "vllm_startup_free_memory", "launch"), found.render()
    assert "free the GPU" in found.suggestion and "Raise `--gpu-memory-utilization`" not in found.suggestion
    if share:
        assert f"`--gpu-memory-utilization {share}`" in found.suggestion


# --- a traceback cut inside NCCL's communicator init --------------------------------

_NCCL_034 = """(Worker_TP1 pid=2201) ERROR 12-03 10:00:02 [multiproc_executor.py:772] Traceback (most recent call last):
(Worker_TP1 pid=2201) ERROR 12-03 10:00:02 [multiproc_executor.py:772]   File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/parallel_state.py", line 1201, in init_model_parallel_group
(Worker_TP1 pid=2201) ERROR 12-03 10:00:02 [multiproc_executor.py:772]     return GroupCoordinator(
(Worker_TP1 pid=2201) ERROR 12-03 10:00:02 [multiproc_executor.py:772]   File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/device_communicators/pynccl.py", line 180, in __init__
(Worker_TP1 pid=2201) ERROR 12-03 10:00:02 [multiproc_executor.py:772]     self.comm: ncclComm_t = self.nccl.ncclCommInitRank(
(Worker_TP1 pid=2201) ERROR 12-03 10:00:02 [multiproc_executor.py:772]                             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
(Worker_TP1 pid=2201) ERROR 12-03 10:00:02 [multiproc_executor.py:772]   File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/device_communicators/pynccl_wrapper.py", line 499, in ncclCommInitRank
(Worker_TP1 pid=2201) ERROR 12-03 10:00:02 [multiproc_executor.py:772]     self.NCCL_CHECK("""


@pytest.mark.parametrize("text", [read_log(VLLM_REAL / "vc28.log"), _NCCL_034], ids=["vc28-0.6", "0.34.0"])
def test_a_traceback_cut_inside_nccl_init_is_nccl(text):
    found = diagnose(text)
    assert (found.crashed, found.kind, found.signature, found.phase) == (
        True, "nccl", "vllm_nccl_init_cut", "launch"), found.render()
    assert "NCCL_DEBUG=INFO" in found.suggestion


def test_the_whole_nccl_error_keeps_ncclss_own_signature():
    whole = _NCCL_034 + "\n" + _NCCL_034.splitlines()[0].split("Traceback")[0] + \
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
    assert said(whole) == (True, "nccl", "vllm_nccl")


def test_a_traceback_cut_elsewhere_in_pynccl_is_not_read_as_init():
    warmup = _NCCL_034.replace("self.comm: ncclComm_t = self.nccl.ncclCommInitRank(", "self.all_reduce(data)")
    warmup = "\n".join(ln for ln in warmup.splitlines() if "ncclCommInitRank" not in ln and "NCCL_CHECK" not in ln)
    assert diagnose(warmup).signature != "vllm_nccl_init_cut"


# --- V0's speculative arguments --------------------------------------------------------

def test_v0_draft_tokens_without_a_draft_model_is_bad_argument():
    # vllm/config.py:1315 (0.6.4.post1)
    assert said(read_log(VLLM_REAL / "vc14.log")) == (True, "bad_argument", "vllm_speculative_config")


# --- a worker that died is no hang ------------------------------------------------------

def test_a_dead_worker_is_no_hang():
    """vLLM's worker monitor says a process ended (multiproc_executor.py:405 (0.34.0)); the
    shared-memory stalls around it are the others waiting on it."""
    assert said(read_log(VLLM_REAL / "vc03.log")) == (True, "unknown", "vllm_engine_dead")
    stalls = "\n".join(ln for ln in read_log(VLLM_REAL / "vc03.log").splitlines() if "died unexpectedly" not in ln)
    assert said(stalls)[1:] == ("hang", "vllm_shm_stall")
    assert said(read_log(VLLM_REAL / "va25.log"))[1] == "hang"  # stalls alone stay a hang


# --- texts both servers share ----------------------------------------------------------

_SHAPE = "AssertionError: Attempted to load weight (torch.Size([3584])) into parameter (torch.Size([3584, 7168]))"


@pytest.mark.parametrize("family", [None, "sglang", "vllm"])
def test_a_weight_of_the_wrong_shape_is_weights_unreadable_in_both_families(family):
    found = diagnose(_SHAPE, family=family)
    assert (found.crashed, found.kind) == (True, "weights_unreadable"), found.render()
    assert "shape" in found.suggestion


@pytest.mark.parametrize("line", [
    "Segmentation fault (core dumped)",
    "Bus error",
    "./serve.sh: line 12: 40211 Aborted                 (core dumped) python -m vllm.entrypoints.openai.api_server",
], ids=["interactive", "no-core", "script"])
@pytest.mark.parametrize("family", [None, "sglang", "vllm"])
def test_the_shells_report_of_a_fatal_signal_is_a_native_crash(line, family):
    assert said(line, family)[:2] == (True, "native_crash")


@pytest.mark.parametrize("line", ["Segmentation fault handler installed", "we saw: Segmentation fault (core dumped)"])
def test_a_sentence_about_a_signal_is_no_native_crash(line):
    assert diagnose(line).kind != "native_crash"


# --- every new text is where its source says --------------------------------------------

_CITED = {
    "vllm_startup_free_memory": ("Free memory on device",),
    "vllm_nccl_init_cut": ("ncclCommInitRank(", "NCCL error"),
}


@pytest.mark.parametrize("name", sorted(_CITED))
def test_the_cited_lines_hold_the_text(name):
    signature = next(s for s in VLLM_SIGNATURES if s.name == name)
    for origin, where in signature.sources:
        if not (VLLM_WHEELS / origin).is_dir():
            continue
        path, line = where.rsplit(":", 1)
        text = (VLLM_WHEELS / origin / path).read_text().splitlines()
        assert any(said in text[int(line) - 1] for said in _CITED[name]), (origin, where)
