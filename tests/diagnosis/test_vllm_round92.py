"""What held-out round 92 of the vLLM corpus (w9201-w9222, measured once on main at cdd81db, staged again at 86bb7d0b)
showed: crashed 20/22, kind 18/22, phase 18/19. Its five misses were read from the source (docs/diagnosis.md,
"Held-out round 92"): two fixed, two kinds disputed (their crashed labels left), one left:

- w9206 (kind): vLLM 0.5.5 hands a file to transformers as a GGUF only when its name ends in ".gguf"
  (transformers_utils/config.py:58 of 0.5.5; 0.6.4.post1 also reads the "GGUF" magic, utils.py:14-16), so a GGUF
  blob without the extension is read as the config and fails to decode: the model path naming a file,
  model_not_found (vllm_crashes/library.py MODEL_PATH_IS_A_FILE, SGLang's models.MODEL_PATH_IS_A_FILE in vLLM's words).
- w9216 (phase): tpu_inference's get_model logs "Loading model with MODEL_IMPL_TYPE=..." before it builds the JAX
  model and loads its weights (tpu-inference 0.13.2 models/common/model_loader.py:364, :386): a load_weights marker
  (diagnosis/vllm_log.py).
- w9208 (kind disputed request_error -> unknown, read so; crashed left): 0.7.2 engine.py:389 is run_mp_engine's
  fatal handler (engine/multiprocessing/engine.py:388-391), the data the memory profile's dummy inputs
  (multimodal/profiling.py:75-76, :86-87, qwen2_vl.py:942): the engine died at start-up, cause cut.
- w9221 (kind disputed hang -> null; crashed left): the user's Ctrl-C in wait_for_startup (0.8.3 v1/utils.py:127),
  no stamp showing how long it waited (as w3114 and w3506).
- left: w9220 (kind) (known_misses.json; docs/diagnosis.md says why).

Each positive test below failed at 86bb7d0b (before the fix). Only this round's logs are read (the suite's time).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import (VLLM_MANIFEST, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed, folded_round,
                      read_log, reads, said)

_ROUND = [f"w92{n:02d}" for n in range(1, 23)]

_LEFT = {"w9208": ["crashed"], "w9220": ["kind"], "w9221": ["crashed"]}


def test_the_round_is_folded_with_its_twenty_two_logs():
    assert folded_round(VLLM_MANIFEST, 92) == _ROUND


def test_two_kinds_of_the_round_are_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == ["w9208", "w9221"]
    assert VLLM_MANIFEST["w9208"]["kind_disputed"] == ["request_error", "unknown"]
    assert VLLM_MANIFEST["w9221"]["kind_disputed"] == ["hang", None]


def test_each_log_reads_as_labelled_but_its_known_misses():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == _LEFT


# --- w9206: a GGUF file without its extension, read by transformers as the config ---------------------------------

def test_a_model_path_naming_a_file_is_model_not_found():
    assert said(read_log("w9206.log")) == (True, "model_not_found", "vllm_model_path_is_a_file")
    assert reads(read_log("w9206.log"))[2] == "launch"


def _config_read(path: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/transformers/configuration_utils.py", line 722, in '
        "_get_config_dict\n"
        "    config_dict = cls._dict_from_json_file(resolved_config_file)\n"
        '  File "/usr/lib/python3.12/site-packages/transformers/configuration_utils.py", line 825, in '
        "_dict_from_json_file\n"
        "    text = reader.read()\n"
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x80 in position 0: invalid start byte\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/vllm/transformers_utils/config.py", line 64, in get_config\n'
        "    config = AutoConfig.from_pretrained(\n"
        '  File "/usr/lib/python3.12/site-packages/transformers/configuration_utils.py", line 726, in '
        "_get_config_dict\n"
        "    raise EnvironmentError(\n"
        f"OSError: It looks like the config file at '{path}' is not a valid JSON file.\n")


def test_a_weights_file_as_the_model_path_in_another_form():
    assert said(_config_read("/models/llama/consolidated.00.pth"), family="vllm") == (
        True, "model_not_found", "vllm_model_path_is_a_file")


def test_a_config_json_that_is_not_json_stays_the_checkpoints():
    """A folder's config.json that does not parse (a cut download) is the checkpoint's file, not the path's."""
    text = _config_read("/models/llama/config.json").replace("byte 0x80", "byte 0xff")
    assert said(text, family="vllm")[2] != "vllm_model_path_is_a_file"


# --- w9216: tpu_inference's model loading line ---------------------------------------------------------------------

def test_tpu_inferences_loading_line_is_the_weights_phase():
    assert reads(read_log("w9216.log")) == (True, "unknown", "load_weights")


def test_without_the_loading_line_the_same_log_ends_at_launch():
    """The phase is the marker's: the same paste without tpu_inference's model_loader lines reads launch."""
    text = "".join(line for line in read_log("w9216.log").splitlines(keepends=True)
                   if "[model_loader.py:" not in line)
    assert reads(text)[2] == "launch"


# --- the disputed and the left logs ---------------------------------------------------------------------------------

def test_the_disputed_and_left_logs_read_as_the_docs_say():
    assert reads(read_log("w9208.log"))[:2] == (True, "unknown")
    assert reads(read_log("w9221.log")) == (False, None, "launch")
    assert reads(read_log("w9220.log")) == (True, "unknown", "serving")


def test_the_left_logs_are_not_read_by_the_new_rule():
    for log_id in _LEFT:
        assert diagnose(read_log(f"{log_id}.log")).signature != "vllm_model_path_is_a_file"


# --- the lines the rule and the second looks cite are vLLM's ---------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.6.4.post1", "vllm/transformers_utils/utils.py", 'return header == b"GGUF"'),
    ("0.6.4.post1", "vllm/transformers_utils/config.py", "is_gguf = check_gguf_file(model)"),
    ("0.7.2", "vllm/engine/multiprocessing/engine.py", "engine_alive.value = False"),
    ("0.7.2", "vllm/multimodal/profiling.py", "video = np.zeros((num_frames, width, height, 3))"),
    ("0.7.2", "vllm/model_executor/models/qwen2_vl.py",
     "prompt_text=image_token * num_images + video_token * num_videos,"),
    ("0.7.2", "vllm/inputs/registry.py", 'msg = (f"Failed to apply {type(hf_processor).__name__} "'),
    ("0.8.3", "vllm/v1/utils.py", 'if self.reader.recv()["status"] != "READY":'),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)
