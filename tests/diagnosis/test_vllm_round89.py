"""What held-out round 89 of the vLLM corpus (w8901-w8925, measured once on main at b1d7f9f with its logs 0e5a335)
showed: crashed 25/25, kind 24/25, phase 20/22. Its three misses were read from the source (docs/diagnosis.md,
"Held-out round 89"): one fixed, two phases disputed, none left:

- w8917 (kind): transformers 4.53's processor refusing the tokenizer vLLM wraps in its cache ("Received a
  CachedWhisperTokenizerFast for argument tokenizer, but a WhisperTokenizer was expected.": processing_utils.py:569
  (4.53.1), the keyword passed to __init__ since 4.53, :1090; vLLM 0.9.2 hands it, inputs/registry.py:137, and
  names it "Cached<Name>", transformers_utils/tokenizer.py:135) is the installed transformers newer than this vLLM
  fits, dependency_mismatch (vllm_crashes/installs.py PROCESSOR_CACHED_TOKENIZER).
- w8905 (phase): disputed to ready: the V1 engine core's scheduler is built (v1/engine/core.py:58 (0.7.0)) after
  _initialize_kv_caches ended on "init engine (profile, create kv cache, warmup model) took" (:89), capture over.
- w8913 (phase): disputed to memory_pool, as round 81's w8110: V0's "Loading model weights took" (0.7.3
  worker/model_runner.py:1115) ends load_model, and the profile run (worker/worker.py:229) writes nothing until the
  KV cache's figures.

Each positive test below failed at 0e5a335 (before the fix). Only this round's logs are read (the suite's time).
"""

from __future__ import annotations

import pytest

from fieldkit import (VLLM_MANIFEST, assert_in_library_wheel, assert_in_wheel, assert_vllm_logs_read_as_labelled,
                      disputed, folded_round, read_log, reads, said, vllm_traceback)

_ROUND = [f"w89{n:02d}" for n in range(1, 26)]


def test_the_round_is_folded_with_its_twenty_five_logs():
    assert folded_round(VLLM_MANIFEST, 89) == _ROUND


def test_two_phases_of_the_round_are_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w8905", "w8913"]


def test_each_log_reads_as_labelled_but_its_known_misses():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w8917: transformers' processor refusing vLLM's cached tokenizer ----------------------------------------------

def test_the_cached_tokenizer_refusal_is_dependency_mismatch():
    assert said(read_log("w8917.log")) == (True, "dependency_mismatch", "vllm_processor_cached_tokenizer")
    assert reads(read_log("w8917.log"))[2] == "memory_pool"


_GET_PROCESSOR = ("vllm/transformers_utils/processor.py", 72, "get_processor",
                  "processor = processor_factory.from_pretrained(")
_PROCESSOR_INIT = ("transformers/processing_utils.py", 551, "__init__",
                   "self.check_argument_for_proper_class(attribute_name, arg)")
_CHECK = ("transformers/processing_utils.py", 569, "check_argument_for_proper_class", "raise TypeError(")


@pytest.mark.parametrize("exc", [
    "TypeError: Received a CachedQwen2TokenizerFast for argument tokenizer, but a Qwen2Tokenizer was expected.",
    "TypeError: Received a CachedWhisperTokenizerFast for argument tokenizer, but a WhisperTokenizer was expected.",
], ids=["another-model", "whisper"])
def test_the_cached_tokenizer_refusal_in_another_form(exc):
    """vLLM 0.9.2's processor call under transformers 4.53.1's check (processing_utils.py:551, :569), another model."""
    text = vllm_traceback(_GET_PROCESSOR, _PROCESSOR_INIT, _CHECK, exc=exc)
    assert said(text, family="vllm") == (True, "dependency_mismatch", "vllm_processor_cached_tokenizer")


@pytest.mark.parametrize("exc", [
    "TypeError: Received a LlamaTokenizerFast for argument tokenizer, but a WhisperTokenizer was expected.",
    "TypeError: Received a CachedWhisperTokenizerFast for argument feature_extractor, but a "
    "WhisperFeatureExtractor was expected.",
], ids=["users-own-tokenizer", "another-argument"])
def test_near_misses_are_no_cached_tokenizer_refusal(exc):
    """A tokenizer vLLM did not wrap (no "Cached"), or a refusal of another argument: not this rule."""
    text = vllm_traceback(_GET_PROCESSOR, _PROCESSOR_INIT, _CHECK, exc=exc)
    assert said(text, family="vllm")[2] != "vllm_processor_cached_tokenizer"


@pytest.mark.parametrize(("path", "text"), [
    ("vllm/inputs/registry.py", 'kwargs["tokenizer"] = self.tokenizer'),
    ("vllm/inputs/registry.py", "# Transformers 4.53.0 has issue with passing tokenizer to"),
    ("vllm/transformers_utils/tokenizer.py", 'CachedTokenizer.__name__ = f"Cached{tokenizer.__class__.__name__}"'),
], ids=["hands-tokenizer", "skips-4.53.0", "cached-name"])
def test_the_cached_tokenizer_lines_are_vllms_own(path, text):
    assert_in_wheel("0.9.2", path, text)


@pytest.mark.parametrize(("release", "path", "text"), [
    ("4.53.1", "transformers/processing_utils.py",
     'f"Received a {type(argument).__name__} for argument {argument_name}, but a {class_name} was expected."'),
    ("4.53.1", "transformers/processing_utils.py", "processor_dict.update(kwargs)"),
    ("4.53.1", "transformers/models/whisper/processing_whisper.py", 'tokenizer_class = "WhisperTokenizer"'),
], ids=["the-check", "kwargs-to-init", "whisper-slow-class"])
def test_the_refusal_is_transformers_own(release, path, text):
    assert_in_library_wheel("transformers", release, path, text)


# --- w8905, w8913: phases disputed; the lines the second looks cite are vLLM's -------------------------------------

def test_the_disputed_phases_read_as_the_second_looks_say():
    assert reads(read_log("w8905.log"))[2] == "ready"
    assert VLLM_MANIFEST["w8905"]["phase_disputed"] == ["graph_capture", "ready"]
    assert reads(read_log("w8913.log"))[2] == "memory_pool"
    assert VLLM_MANIFEST["w8913"]["phase_disputed"] == ["load_weights", "memory_pool"]


@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.7.0", "vllm/v1/engine/core.py", "self.scheduler = Scheduler("),
    ("0.7.0", "vllm/v1/engine/core.py", 'logger.info(("init engine (profile, create kv cache, "'),
    ("0.7.0", "vllm/v1/engine/core.py", 'ready_pipe.send({"status": "READY"})'),
    ("0.7.3", "vllm/worker/model_runner.py", 'logger.info("Loading model weights took %.4f GB",'),
    ("0.7.3", "vllm/engine/llm_engine.py", "self._initialize_kv_caches()"),
    ("0.7.3", "vllm/worker/worker.py", "self.model_runner.profile_run()"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_second_looks_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)
