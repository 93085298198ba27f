"""What held-out round 71 of the vLLM corpus (w7101-w7115, measured once on main at fca87be with its logs b0f4fcf)
showed: crashed 15/15, kind 14/15, phase 10/11. Its two misses were read from the source (docs/diagnosis.md,
"Held-out round 71"); both were ddlab's to fix, none is disputed:

- w7104 (phase): vllm-omni's Voxtral TTS failing to encode a reference audio ("encode_waveforms requires encoder
  weights which are not available in the open-source checkpoint.", encode_waveforms, vllm-omni 0.30.0
  models/voxtral_tts/voxtral_tts_audio_tokenizer.py:990, from embed_multimodal, voxtral_tts_audio_generation.py:1007).
  Start-up encodes no dummy audio: both Voxtral stages skip the multimodal profile (deploy/voxtral_tts.yaml:46, :71),
  which profile_run honours (worker/gpu_generation_model_runner.py:931; vLLM 0.20.0 v1/worker/gpu_model_runner.py:5792):
  only a request's reference audio reaches it, serving (diagnosis/vllm_frames.py, a serving frame).
- w7105 (kind): V0's registry warning "No model architectures are specified" (model_executor/models/registry.py:400
  (0.7.3)), then the engine's "'NoneType' object is not iterable" (the loop right under the warning, :403) with its
  traceback cut in create_model_config: a config that names no architecture, arch_unsupported
  (vllm_crashes/archs.py, V0_NO_ARCHITECTURES: the warning explains the crash right after it).

Each positive test below failed at b0f4fcf (before the fixes).
"""

from __future__ import annotations

import pytest

from fieldkit import (SGLANG_WHEELS, VLLM_MANIFEST, VLLM_WHEELS, assert_vllm_logs_read_as_labelled, disputed,
                      folded_round, not_unpacked, read_log, reads, said)

_ROUND = [f"w71{n:02d}" for n in range(1, 16)]


def test_the_round_is_folded_with_its_fifteen_logs():
    assert folded_round(VLLM_MANIFEST, 71) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    """Crashed, kind and phase as labelled, no miss left."""
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w7104: vllm-omni's Voxtral TTS encoding a request's reference audio ----------------------------------------------

def test_voxtral_encoding_a_reference_audio_is_a_crash_while_serving():
    assert reads(read_log("w7104.log")) == (True, "unknown", "serving")


_OMNI = "/usr/local/lib/python3.12/dist-packages/vllm_omni/model_executor/models/voxtral_tts"


def test_the_same_encoding_in_another_form():
    """vllm-omni 0.30.0's frames (voxtral_tts_audio_generation.py:1007, voxtral_tts_audio_tokenizer.py:992), whose
    check raises a ValueError, under another stage's stamp."""
    stamp = "(StageEngineCoreProc pid=81) ERROR 09-02 10:00:00 [stage_engine_core_proc.py:174] "
    text = "".join(stamp + line + "\n" for line in (
        f'  File "{_OMNI}/voxtral_tts_audio_generation.py", line 1007, in embed_multimodal',
        "    res = self.audio_tokenizer.encode_waveforms(audio_waveforms)",
        f'  File "{_OMNI}/voxtral_tts_audio_tokenizer.py", line 992, in encode_waveforms',
        "    raise ValueError(",
        "ValueError: encode_waveforms requires encoder weights which are not available in the open-source checkpoint.",
    ))
    assert reads(text)[::2] == (True, "serving")


@pytest.mark.parametrize("text", [
    # the same frame under the start-up's profile run (a stage whose config profiles the encoder: a startup frame wins)
    "ERROR 09-02 10:00:00 [core.py:1000]   File \"/x/vllm/v1/worker/gpu_model_runner.py\", line 5836, in profile_run\n"
    f"ERROR 09-02 10:00:00 [core.py:1000]   File \"{_OMNI}/voxtral_tts_audio_tokenizer.py\", line 992, in "
    "encode_waveforms\n"
    "ERROR 09-02 10:00:00 [core.py:1000] ValueError: encode_waveforms requires encoder weights\n",
    # another model's codec of the same name
    "ERROR 09-02 10:00:00 [core.py:1000]   File \"/x/vllm_omni/model_executor/models/other_tts/codec.py\", line 10, in "
    "encode_waveforms\n"
    "ERROR 09-02 10:00:00 [core.py:1000] RuntimeError: bad waveform\n",
], ids=["under-profile-run", "another-codec"])
def test_near_misses_are_no_reference_audio_while_serving(text):
    assert reads(text, "vllm")[2] != "serving"


# --- w7105: V0's warning that the model's config names no architecture -----------------------------------------------

def test_v0s_no_architectures_warning_explains_the_crash_after_it():
    assert said(read_log("w7105.log")) == (True, "arch_unsupported", "vllm_no_architectures_warned")
    assert reads(read_log("w7105.log")) == (True, "arch_unsupported", "launch")


def test_the_same_warning_in_another_form():
    """0.6.4.post1's: the warning at registry.py:376, the loop under it (:386) iterating None, logged whole by
    run_mp_engine (engine/multiprocessing/engine.py:366)."""
    stamp = "ERROR 11-20 10:00:00 engine.py:366] "
    text = "WARNING 11-20 10:00:00 registry.py:376] No model architectures are specified\n" + "".join(
        stamp + line + "\n" for line in (
            "'NoneType' object is not iterable",
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3.10/site-packages/vllm/engine/arg_utils.py", line 959, in create_engine_config',
            "    model_config = self.create_model_config()",
            '  File "/usr/lib/python3.10/site-packages/vllm/model_executor/models/registry.py", line 386, in '
            "inspect_model_cls",
            "    for arch in architectures:",
            "TypeError: 'NoneType' object is not iterable",
        ))
    assert reads(text) == (True, "arch_unsupported", "launch")


@pytest.mark.parametrize("text", [
    # the same TypeError with no warning before it
    "ERROR 03-03 07:43:54 engine.py:400] 'NoneType' object is not iterable\n"
    "ERROR 03-03 07:43:54 engine.py:400] Traceback (most recent call last):\n"
    "ERROR 03-03 07:43:54 engine.py:400]   File \"/x/vllm/engine/arg_utils.py\", line 1127, in create_engine_config\n",
    # the words in a user's own line, then a crash
    "INFO 03-03 07:43:54 my_app.py:1] No model architectures are specified in the config, adding them\n"
    "ERROR 03-03 07:43:54 engine.py:400] 'NoneType' object is not iterable\n",
], ids=["no-warning", "prose"])
def test_near_misses_are_no_missing_architectures(text):
    assert reads(text, "vllm")[1] != "arch_unsupported"


def test_the_warning_alone_is_no_crash():
    text = ("INFO 03-03 07:43:54 __init__.py:207] Automatically detected platform cuda.\n"
            "WARNING 03-03 07:43:54 registry.py:400] No model architectures are specified\n")
    assert reads(text, "vllm")[0] is False


# --- the rules' texts, at the lines the releases hold -----------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "line", "text"), [
    ("0.7.3", "vllm/model_executor/models/registry.py", 400, 'logger.warning("No model architectures are specified")'),
    ("0.7.3", "vllm/model_executor/models/registry.py", 403, "for model in architectures:"),
    ("0.7.3", "vllm/model_executor/models/registry.py", 420, "return self._raise_for_unsupported(architectures)"),
    ("0.7.3", "vllm/config.py", 426, 'architectures = getattr(self.hf_config, "architectures", [])'),
    ("0.7.3", "vllm/engine/arg_utils.py", 1127, "model_config = self.create_model_config()"),
    ("0.7.3", "vllm/engine/multiprocessing/engine.py", 400, "logger.exception(e)"),
    ("0.6.4.post1", "vllm/model_executor/models/registry.py", 376,
     'logger.warning("No model architectures are specified")'),
    ("0.6.4.post1", "vllm/model_executor/models/registry.py", 386, "for arch in architectures:"),
    ("0.6.4.post1", "vllm/engine/multiprocessing/engine.py", 366, "logger.exception(e)"),
    ("0.10.0", "vllm/model_executor/models/registry.py", 499, 'logger.warning("No model architectures are specified")'),
    ("0.10.0", "vllm/model_executor/models/registry.py", 503, "filter(lambda model: model in self.models, architectures))"),
    ("0.20.0", "vllm/v1/worker/gpu_model_runner.py", 5792, "if mm_config is not None and mm_config.skip_mm_profiling:"),
    ("0.20.0", "vllm/v1/worker/gpu_model_runner.py", 5836, "dummy_encoder_outputs = self.model.embed_multimodal("),
], ids=["warning-0.7.3", "loop-0.7.3", "unsupported-0.7.3", "config-0.7.3", "create-model-config", "engine-400",
        "warning-0.6.4", "loop-0.6.4", "engine-366", "warning-0.10.0", "filter-0.10.0", "skip-mm-profiling",
        "profile-encoder"])
def test_each_cited_vllm_line_holds_its_text(release, path, line, text):
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert text in source.read_text().splitlines()[line - 1], (source, line)


_VOXTRAL = "vllm_omni/model_executor/models/voxtral_tts"


@pytest.mark.parametrize(("path", "line", "text"), [
    (f"{_VOXTRAL}/voxtral_tts_audio_tokenizer.py", 990, "def encode_waveforms(self, x: list[torch.Tensor])"),
    (f"{_VOXTRAL}/voxtral_tts_audio_tokenizer.py", 993,
     '"encode_waveforms requires encoder weights which are not available in the open-source checkpoint."'),
    (f"{_VOXTRAL}/voxtral_tts_audio_generation.py", 1007, "res = self.audio_tokenizer.encode_waveforms(audio_waveforms)"),
    ("vllm_omni/deploy/voxtral_tts.yaml", 46, "skip_mm_profiling: true"),
    ("vllm_omni/deploy/voxtral_tts.yaml", 71, "skip_mm_profiling: true"),
    ("vllm_omni/worker/gpu_generation_model_runner.py", 931, "if mm_config is not None and mm_config.skip_mm_profiling:"),
], ids=["encode-def", "encode-message", "embed-call", "deploy-stage-0", "deploy-stage-1", "generation-profile"])
def test_each_cited_vllm_omni_line_holds_its_text(path, line, text):
    source = SGLANG_WHEELS / "vllm-omni-0.30.0" / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert text in source.read_text().splitlines()[line - 1], (source, line)
