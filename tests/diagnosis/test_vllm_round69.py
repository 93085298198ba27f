"""What held-out round 69 of the vLLM corpus (w6901-w6924, measured once on main at 086af58 with its logs 656de82,
re-staged as b94d44f) showed: crashed 23/24, kind 21/24, phase 20/22. Its four misses were read from the source
(docs/diagnosis.md, "Held-out round 69"); all four were ddlab's to fix, none is disputed:

- w6901 (kind): vllm-omni's DreamZero pipeline refusing the engine backend its deploy config names
  ("DreamZeroPipeline requires the AR-Diffusion engine; set engine_backend: ... in the deploy config (got
  engine_backend='default')", vllm-omni 86bdcaf vllm_omni/diffusion/models/dreamzero/pipeline_dreamzero.py:212-216):
  a setting refused at launch, bad_argument (vllm_crashes/entrypoints.py, OMNI_ENGINE_BACKEND).
- w6916 (kind): 0.6.2's pipeline-parallel check printing the architectures it supports ("Pipeline parallelism is only
  supported for the following  architectures: [...]", vllm/config.py:423-425 (0.6.2), ModelConfig's
  verify_with_parallel_config): bad_argument (vllm_crashes/signatures.py, PP_UNSUPPORTED), and a vLLM mark
  (entrypoints.py, TEXT_MARKS) for a paste of that one line.
- w6912 (crashed, kind, phase): the worker's "WorkerProc hit an exception." (logger.exception in worker_busy_loop,
  v1/executor/multiproc_executor.py:596 (0.10.1.1)) with only its traceback's header under it is a traceback cut at
  its header, a crash reported (diagnosis/vllm_records.py); vllm-ascend's "Capturing ACL graphs (...)" bar
  (vllm_ascend/worker/model_runner_v1.py:2525, v0.10.1rc1) marks graph_capture (diagnosis/vllm_log.py).
- w6918 (phase): "[EP Rank i/n] Expert parallelism is enabled." is logged by FusedMoE's constructor
  (model_executor/layers/fused_moe/layer.py:494 (0.13.0)) while the model is built: load_weights
  (diagnosis/vllm_model_lines.py).

Each positive test below failed at b94d44f (before the fixes).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      not_unpacked, read_log, reads, said)

_ROUND = [f"w69{n:02d}" for n in range(1, 25)]


def test_the_round_is_folded_with_its_twenty_four_logs():
    assert folded_round(VLLM_MANIFEST, 69) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    """Crashed, kind and phase as labelled, no miss left."""
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w6901: a vllm-omni pipeline refusing its deploy config's engine backend -----------------------------------------

def test_a_pipeline_refusing_the_deploy_configs_engine_is_a_bad_argument():
    assert reads(read_log("w6901.log")) == (True, "bad_argument", "launch")


def test_the_same_engine_refusal_in_another_form():
    """The per-role form of later commits, as a stage's worker logs its traceback's last line."""
    text = ("(StageDiffusionProc pid=412) ERROR 07-20 10:00:00 [diffusion_worker.py:300] ValueError: DreamZeroPipeline "
            "requires the AR-Diffusion engine for the 'denoise' role; set engine_backend: "
            "vllm_omni.experimental.ar_diffusion.engine.ARDiffusionEngine in the deploy config (got "
            "engine_backend='default').\n")
    assert said(text, "vllm")[:3] == (True, "bad_argument", "vllm_omni_engine_backend")


@pytest.mark.parametrize("text", [
    # the engine named in prose (a README's line), no refusal
    "INFO 07-20 10:00:00 [serve.py:10] denoise stage requires the AR-Diffusion engine (set in the deploy YAML)\n",
    # vllm-omni's RuntimeError at a step, not the deploy config's check
    "ERROR 07-20 10:00:00 [core.py:100] RuntimeError: TaoMate-H3 step execution requires the AR-Diffusion engine "
    "(engine_backend: vllm_omni.experimental.ar_diffusion.engine.ARDiffusionEngine)\n",
], ids=["prose", "step-runtime-error"])
def test_near_misses_are_no_engine_backend_refusal(text):
    assert said(text, "vllm")[2] != "vllm_omni_engine_backend"


# --- w6916: 0.6.2's pipeline-parallel refusal, its list of architectures ---------------------------------------------

def test_the_listed_architectures_refusal_is_a_bad_argument():
    assert said(read_log("w6916.log"))[:3] == (True, "bad_argument", "vllm_pp_unsupported")


def test_the_same_pp_refusal_in_another_form():
    """0.5.1's list (fewer architectures), under V0's stamp as the engine's traceback ends."""
    text = ("ERROR 07-02 10:00:00 api_server.py:100] Traceback (most recent call last):\n"
            'ERROR 07-02 10:00:00 api_server.py:100]   File "/usr/lib/python3.10/site-packages/vllm/config.py", '
            "line 273, in verify_with_parallel_config\n"
            "ERROR 07-02 10:00:00 api_server.py:100] NotImplementedError: Pipeline parallelism is only supported "
            "for the following  architectures: ['AquilaModel', 'AquilaForCausalLM', 'InternLMForCausalLM', "
            "'LlamaForCausalLM', 'LLaMAForCausalLM', 'MistralForCausalLM', 'Phi3ForCausalLM', 'GPT2LMHeadModel'].\n")
    assert said(text)[:3] == (True, "bad_argument", "vllm_pp_unsupported")
    assert reads(text)[2] == "launch"


@pytest.mark.parametrize("text", [
    # V0's LLMEngine refusing PP (use AsyncLLMEngine): another check, another text
    "NotImplementedError: Pipeline parallelism is only supported through AsyncLLMEngine as performance will be "
    "severely degraded otherwise.\n",
    # the words without the list
    "INFO 07-02 10:00:00 config.py:1] Pipeline parallelism is only supported for the following models\n",
], ids=["llm-engine", "no-list"])
def test_near_misses_are_no_pp_architecture_refusal(text):
    assert said(text, "vllm")[2] != "vllm_pp_unsupported"


# --- w6912: a worker's exception cut under its traceback's header, during ACL graph capture -------------------------

def test_a_worker_exception_cut_at_its_traceback_header_during_acl_capture_is_a_crash_at_graph_capture():
    assert reads(read_log("w6912.log")) == (True, "unknown", "graph_capture")


def test_the_same_cut_in_another_form():
    """A decode-only capture bar of v0.11.0rc0 and a rank-tagged worker of 0.11.x, the record cut at the same place."""
    text = ("(EngineCore_DP0 pid=100) INFO 10-01 10:00:00 [kv_cache_utils.py:1087] GPU KV cache size: 100,000 tokens\n"
            "Capturing ACL graphs (decode, FULL):  50%|#####     | 2/4 [00:01<00:01,  1.50it/s]\n"
            "(Worker_TP1 pid=200) ERROR 10-01 10:00:02 [multiproc_executor.py:654] WorkerProc hit an exception.\n"
            "(Worker_TP1 pid=200) ERROR 10-01 10:00:02 [multiproc_executor.py:654] Traceback (most recent call last):\n")
    assert reads(text) == (True, "unknown", "graph_capture")


@pytest.mark.parametrize(("text", "want"), [
    # the header under another record's prefix (another process): no announced record cut there
    ("(Worker_TP1 pid=200) ERROR 10-01 10:00:02 [multiproc_executor.py:654] WorkerProc hit an exception.\n"
     "(APIServer pid=300) INFO 10-01 10:00:03 [api_server.py:1] Traceback (most recent call last):\n", False),
], ids=["other-prefix"])
def test_near_misses_are_no_cut_announced_record(text, want):
    assert reads(text, "vllm")[0] is want


def test_only_the_logs_last_two_lines_make_the_cut_record():
    """The near miss above with an exception the worker logged whole earlier in the paste, the server serving after
    it: that earlier message with its header under it does not make the last two lines one record cut at its header
    (the rule once took any such pair in the paste, and read this paste as crashed)."""
    worker = "(Worker_TP1 pid=200) ERROR 10-01 10:00:02 [multiproc_executor.py:654] "
    text = (f"{worker}WorkerProc hit an exception.\n{worker}Traceback (most recent call last):\n"
            f'{worker}  File "/opt/vllm/v1/executor/multiproc_executor.py", line 649, in worker_busy_loop\n'
            f"{worker}    output = func(*args, **kwargs)\n{worker}ValueError: this request is refused\n"
            "(APIServer pid=300) INFO 10-01 10:00:04 [loggers.py:123] Engine 000: Avg prompt throughput: 10.0 tokens/s\n"
            f"{worker}WorkerProc hit an exception.\n"
            "(APIServer pid=300) INFO 10-01 10:00:05 [api_server.py:1] Traceback (most recent call last):\n")
    assert reads(text, "vllm")[0] is False


@pytest.mark.parametrize("text", [
    # ACL graphs named in prose, no capture bar
    "INFO 10-01 10:00:00 [platform.py:1] ACL graph mode is enabled; capturing sizes [1, 2, 4]\n",
    # vllm-ascend's log line before the bar (no "Capturing")
    "INFO 10-01 10:00:00 [model_runner_v1.py:2518] Starting to capture ACL graphs for cases: [4, 2, 1], mode: "
    "PIECEWISE, uniform_decode: False\n",
], ids=["prose", "starting-line"])
def test_near_misses_are_no_acl_capture_bar(text):
    assert reads(text, "vllm")[2] != "graph_capture"


# --- w6918: the MoE layers' expert placement, logged while the model is built -----------------------------------------

def test_the_ep_rank_placement_lines_are_load_weights():
    assert reads(read_log("w6918.log")) == (False, None, "load_weights")


def test_the_same_line_in_another_form():
    """0.10.2's wording (no placement strategy), after the engine's start lines."""
    text = ("(EngineCore_0 pid=10) INFO 09-01 10:00:00 [core.py:74] Initializing a V1 LLM engine (v0.10.2) with config\n"
            "(VllmWorker TP0 pid=20) INFO 09-01 10:00:05 [layer.py:854] [EP Rank 0/8] Expert parallelism is enabled. "
            "Local/global number of experts: 32/256. Experts local to global index map: 0->0, 1->1.\n")
    assert reads(text)[2] == "load_weights"


@pytest.mark.parametrize("text", [
    # EP named in the args, not the layer's line
    "(APIServer pid=1) INFO 09-01 10:00:00 [utils.py:1] non-default args: {'enable_expert_parallel': True}\n",
    # EPLB's rearrangement while serving: another line
    "(EngineCore_0 pid=10) INFO 09-01 12:00:00 [eplb_state.py:1] Rearranging experts (profile) ... Expert "
    "parallelism rebalanced.\n",
], ids=["args", "eplb"])
def test_near_misses_are_no_layer_construction(text):
    assert reads(text, "vllm")[2] != "load_weights"


# --- the rules' texts, at the lines the releases hold -----------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.6.2", "vllm/config.py", 424, '"Pipeline parallelism is only supported for the following "'),
    ("0.6.2", "vllm/config.py", 425, 'f" architectures: {_PP_SUPPORTED_MODELS}.")'),
    ("0.5.1", "vllm/config.py", 273, '"Pipeline parallelism is only supported for the following "'),
    ("0.10.1.1", "vllm/v1/executor/multiproc_executor.py", 596, 'logger.exception("WorkerProc hit an exception.")'),
    ("0.13.0", "vllm/model_executor/layers/fused_moe/layer.py", 494, "logger.info_once("),
    ("0.13.0", "vllm/model_executor/layers/fused_moe/layer.py", 495, '"[EP Rank %s/%s] Expert parallelism is enabled.'),
    ("0.10.2", "vllm/model_executor/layers/fused_moe/layer.py", 854, '"[EP Rank %s/%s] Expert parallelism is enabled.'),
    ("0.34.0", "vllm/model_executor/layers/fused_moe/expert_map_manager.py", 251,
     '"[EP Rank %s/%s] Expert parallelism is enabled.'),
], ids=["pp-0.6.2", "pp-list-0.6.2", "pp-0.5.1", "worker-exception", "ep-call", "ep-text", "ep-0.10.2", "ep-0.34.0"])
def test_each_cited_vllm_line_holds_its_text(release, path, line, text):
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert text in source.read_text().splitlines()[line - 1], (source, line)
