"""Held-out round 65 (issue 24): a diffusion stage's failed request, its module loading, create_weights, no model_type.

Round 65 (h65001-h65009; excerpts of issue threads and pull requests) was measured once on main at d8244b4
(with the round's logs, 7ea6253): crashed 8/9, kind 7/9, phase 4/7. docs/diagnosis.md, "Held-out round
65", tells the round. All four misses were ddlab's:

- h65002, SGLang Diffusion's "[TextEncodingStage] Error during execution after N ms: ..." with a cut traceback:
  the stage profiler logs the stage's exception (0.5.6.post2 multimodal_gen/runtime/utils/perf_logger.py:161-168)
  and the worker's execute_forward answers the request with it (managers/gpu_worker.py:113-120):
  ``request_error`` at serving, by ``diffusion_request_failed`` (crashes/kinds/diffusion.py).
- h65003, a Qwen-Image pipeline's "Loading required modules" bar and "Loaded model with N B parameters"
  (0.5.6.post2 pipelines_core/composed_pipeline_base.py:280, loader/component_loader.py:692): load_weights
  (diagnosis/logtext.py).
- h65005, "AttributeError: 'NoneType' object has no attribute 'create_weights'": create_weights is called by
  the layers' constructors only (0.5.23 layers/moe/fused_moe_triton/layer.py:561): load_weights
  (diagnosis/phase.py).
- h65008, transformers' "Unrecognized model in PATH. Should have a `model_type` key in its config.json": raised
  only after the config.json was read (transformers 4.56.1 models/auto/configuration_auto.py:1307, :1329-1333):
  ``arch_unsupported`` by ``config_without_model_type`` (crashes/kinds/models.py), no longer model_not_found.

No label was disputed. Each positive test here fails on 7ea6253.
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed,
                      folded_round, reads, said, vllm_signature)

_IDS = folded_round(REAL_MANIFEST, 65)


def test_round65_is_folded_into_work_with_no_label_disputed():
    assert _IDS == [f"h650{n:02d}" for n in range(1, 10)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h65002", "diffusion_request_failed"),
    ("h65003", None),
    ("h65005", None),
    ("h65008", "config_without_model_type"),
], ids=lambda v: v if isinstance(v, str) else "no signature")
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h65001", None), ("h65004", None), ("h65006", "capture_failed"), ("h65007", None), ("h65009", "cuda_oom"),
], ids=lambda v: v if isinstance(v, str) else "no signature")
def test_each_other_log_of_the_round_reads_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h65002: a pipeline stage's profiler logging the request's error -----------------------------------

_RUNNING = ("[12-24 08:20:04] Running pipeline stages: ['input_validation_stage', 'denoising_stage', "
            "'decoding_stage']\n")


# the same line from other releases' forms, written from their sources
@pytest.mark.parametrize("text", [
    # 0.5.5 pipelines/stages/base.py:204 (the time unformatted) and its own traceback line after it
    "[11-10 09:00:01] [DenoisingStage] Error during execution after 812.5530004501343 ms: CUDA out of memory.\n"
    "[11-10 09:00:01] [DenoisingStage] Traceback: Traceback (most recent call last):\n",
    # 0.5.23 utils/perf_logger.py:349, a traceback cut in the stage's forward
    "[05-02 10:11:12] [DecodingStage] Error during execution after 3.2101 ms: shape '[1, 16, 1, 64, 64]' is invalid\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/dist-packages/sglang/multimodal_gen/runtime/pipelines_core/stages/base.py", '
    "line 408, in __call__\n",
], ids=["0.5.5", "0.5.23-cut"])
def test_a_stages_logged_error_reads_as_one_requests_error(text):
    assert reads(_RUNNING + text) == (False, "request_error", "serving")


# near misses: the words without the stage's bracket, a bracket that is no stage name, no time
@pytest.mark.parametrize("text", [
    "RuntimeError: Error during execution after 14.8984 ms: CUDA error: CUBLAS_STATUS_ALLOC_FAILED\n",
    "[12-24 08:20:04] [rank 0] Error during execution after 14.8984 ms: CUDA error\n"
    "RuntimeError: CUDA error\n",
    "[12-24 08:20:04] [TextEncodingStage] Error during execution: CUDA error\nRuntimeError: CUDA error\n",
], ids=["exception", "rank-bracket", "no-time"])
def test_near_misses_do_not_read_as_a_stages_request_error(text):
    assert said(text)[1] != "request_error"


# --- h65003: SGLang Diffusion loading its modules --------------------------------------------------------

@pytest.mark.parametrize("text", [
    # 0.5.23 composed_pipeline_base.py:625, the bar on its own line
    "[05-02 10:00:00] Loading text_encoder from /m/text_encoder\n"
    "Loading required modules:  33%|███▎      | 1/3 [00:05<00:10,  5.01s/it]\n",
    # 0.5.5 component_loader.py:559, the DiT loader's end before the next module
    "[11-10 09:00:00] Loaded model with 12.00B parameters\n[11-10 09:00:00] Loading vae from /m/vae\n",
], ids=["bar", "dit-loaded"])
def test_a_diffusion_pipeline_loading_its_modules_is_load_weights(text):
    assert reads(text) == (False, None, "load_weights")


# near misses: the list logged before the loop, "Loaded model with" that is no parameter count
@pytest.mark.parametrize("text", [
    "[12-17 21:41:20] Loading required components: ['text_encoder', 'tokenizer', 'vae', 'transformer']\n",
    "[12-17 21:41:20] Loaded model with LoRA adapter lora0\n",
], ids=["components-list", "lora"])
def test_near_misses_are_not_module_loading(text):
    assert reads(text)[2] != "load_weights"


# --- h65005: an error of create_weights is the model being built ------------------------------------------

@pytest.mark.parametrize("text", [
    # 0.5.10 modelslim.py:234-238's warning stamped, then the error (no traceback)
    "[2026-04-25 10:00:00 TP0] Unsupported FusedMoe modelslim scheme: ['FLOAT', 'FLOAT'] in layer: "
    "model.layers.0.mlp.experts\nAttributeError: 'NoneType' object has no attribute 'create_weights'\n",
    # a scheme's create_weights called with a keyword it lacks (0.5.10 modelslim.py:350 passes routing_method_type)
    "TypeError: ModelSlimW8A8Int8MoE.create_weights() got an unexpected keyword argument 'routing_method_type'\n",
], ids=["stamped-warning", "typeerror"])
def test_an_error_of_create_weights_is_load_weights(text):
    assert reads(text)[0] is True and reads(text)[2] == "load_weights"


# near misses: another attribute of the quant method (its apply runs in a forward), a longer name
@pytest.mark.parametrize("text", [
    "AttributeError: 'NoneType' object has no attribute 'apply'\n",
    "AttributeError: 'NoneType' object has no attribute 'create_weights_cache'\n",
], ids=["apply", "longer-name"])
def test_near_misses_of_create_weights_keep_launch(text):
    assert reads(text)[2] == "launch"


# --- h65008: a config.json without model_type --------------------------------------------------------

_FULL = ("ValueError: Unrecognized model in /models/draft. Should have a `model_type` key in its config.json, or "
         "contain one of the following strings in its name: albert, align, altclip, llama, qwen2, qwen3\n")
_AUTO_CONFIG = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/hf_transformers_utils.py", line 129, in get_config\n'
    "    config = AutoConfig.from_pretrained(\n"
    '  File "/usr/local/lib/python3.10/dist-packages/transformers/models/auto/configuration_auto.py", '
    "line 1329, in from_pretrained\n"
    "    raise ValueError(\n")


@pytest.mark.parametrize("text", [_FULL, _AUTO_CONFIG + _FULL], ids=["4.56.1-message", "traceback"])
def test_a_config_without_model_type_is_an_unknown_architecture(text):
    assert reads(text) == (True, "arch_unsupported", "launch")


def test_vllm_reads_the_same_text_the_same_way():
    assert vllm_signature(_FULL) == "vllm_config_without_model_type"


# near misses: the folder missing, a model type transformers does not know (arch_unsupported by its own rule)
@pytest.mark.parametrize(("text", "kind"), [
    ("OSError: /models/draft is not a local folder and is not a valid model identifier listed on "
     "'https://huggingface.co/models'\n", "model_not_found"),
    ("ValueError: The checkpoint you are trying to load has model type `qwen9` but Transformers does not "
     "recognize this architecture.\n", "arch_unsupported"),
], ids=["no-folder", "unknown-type"])
def test_near_misses_are_not_a_config_without_model_type(text, kind):
    found = said(text)
    assert found[1] == kind and found[2] != "config_without_model_type"


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.5.6.post2", "sglang/multimodal_gen/runtime/utils/perf_logger.py", 162,
     '"[%s] Error during execution after %.4f ms: %s",'),
    ("sglang", "0.5.6.post2", "sglang/multimodal_gen/runtime/utils/perf_logger.py", 168, "return False"),
    ("sglang", "0.5.6.post2", "sglang/multimodal_gen/runtime/pipelines_core/stages/base.py", 191,
     "with StageProfiler(stage_name, logger=logger, timings=batch.timings):"),
    ("sglang", "0.5.6.post2", "sglang/multimodal_gen/runtime/managers/gpu_worker.py", 113, "except Exception as e:"),
    ("sglang", "0.5.6.post2", "sglang/multimodal_gen/runtime/managers/gpu_worker.py", 120,
     'output_batch.error = f"Error executing request {req.request_id}: {e}"'),
    ("sglang", "0.5.5", "sglang/multimodal_gen/runtime/pipelines/stages/base.py", 204,
     '"[%s] Error during execution after %s ms: %s",'),
    ("sglang", "0.5.23", "sglang/multimodal_gen/runtime/utils/perf_logger.py", 349,
     '"[%s] Error during execution after %.4f ms: %s",'),
    ("sglang", "0.5.6.post2", "sglang/multimodal_gen/runtime/pipelines_core/composed_pipeline_base.py", 280,
     'desc="Loading required modules"'),
    ("sglang", "0.5.5", "sglang/multimodal_gen/runtime/pipelines/composed_pipeline_base.py", 277,
     'desc="Loading required modules"'),
    ("sglang", "0.5.23", "sglang/multimodal_gen/runtime/pipelines_core/composed_pipeline_base.py", 625,
     'desc="Loading required modules"'),
    ("sglang", "0.5.6.post2", "sglang/multimodal_gen/runtime/loader/component_loader.py", 692,
     'logger.info("Loaded model with %.2fB parameters", total_params / 1e9)'),
    ("sglang", "0.5.5", "sglang/multimodal_gen/runtime/loader/component_loader.py", 559,
     'logger.info("Loaded model with %.2fB parameters", total_params / 1e9)'),
    ("sglang", "0.5.9", "sglang/multimodal_gen/runtime/loader/component_loaders/transformer_loader.py", 159,
     'logger.info("Loaded model with %.2fB parameters", total_params / 1e9)'),
    ("sglang", "0.5.10", "sglang/srt/layers/moe/fused_moe_triton/layer.py", 158, "def __init__("),
    ("sglang", "0.5.10", "sglang/srt/layers/moe/fused_moe_triton/layer.py", 276, "self.quant_method.create_weights("),
    ("sglang", "0.5.10", "sglang/srt/layers/quantization/modelslim/modelslim.py", 235,
     'f"Unsupported FusedMoe modelslim scheme: "'),
    ("sglang", "0.5.10", "sglang/srt/layers/quantization/modelslim/modelslim.py", 238, "return None"),
    ("sglang", "0.5.23", "sglang/srt/layers/moe/fused_moe_triton/layer.py", 561, "self.quant_method.create_weights("),
    ("sglang", "0.5.23", "sglang/srt/layers/linear.py", 436, "self._initialize_partition("),
    ("sglang", "0.5.23", "sglang/srt/layers/linear.py", 494, "self.quant_method.create_weights("),
    ("sglang", "0.5.23", "sglang/srt/layers/vocab_parallel_embedding.py", 342, "self.quant_method.create_weights("),
    ("sglang", "0.5.23", "sglang/srt/layers/radix_attention.py", 107, "self.quant_method.create_weights("),
    ("transformers", "4.56.1", "transformers/models/auto/configuration_auto.py", 1288,
     "config_dict, unused_kwargs = PretrainedConfig.get_config_dict(pretrained_model_name_or_path, **kwargs)"),
    ("transformers", "4.56.1", "transformers/models/auto/configuration_auto.py", 1307,
     'elif "model_type" in config_dict:'),
    ("transformers", "4.56.1", "transformers/models/auto/configuration_auto.py", 1330,
     'f"Unrecognized model in {pretrained_model_name_or_path}. "'),
    ("transformers", "4.56.1", "transformers/configuration_utils.py", 736, "return None, kwargs"),
    ("transformers", "4.56.1", "transformers/utils/hub.py", 511,
     "is not a local folder and is not a valid model identifier"),
], ids=lambda v: str(v).rsplit("/", 1)[-1] if isinstance(v, str) else str(v))
def test_each_line_the_rules_cite_is_the_releases(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
