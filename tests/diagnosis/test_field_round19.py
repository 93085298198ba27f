"""Held-out round 19 (issue 24): folded into ``work``, its miss fixed by a general rule read from the source.

Round 19 (h19001-h19007) was measured once on main at cdf986d (a39dee7 and the round's logs: crashed 7/7,
kind 6/7, phase 3/3) and folded into ``work``; docs/diagnosis.md, "Held-out round 19", explains the miss.
h19007's ServerArgs line was shortened by its reporter ('model_path=......'): kept as pasted, tagged
``user-elided`` (nothing is read from the elided part). A rule's test reads the corpus log (work split
since the fold), a text written from the same source texts, and a near miss that must not read the same
way; the positive tests fail on cdf986d (the near misses hold on both). A text cited from a wheel is
checked there where the wheel is unpacked (skipped elsewhere).
"""

from __future__ import annotations

from collections import Counter

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import REAL_MANIFEST, assert_in_library_wheel, assert_reads_as_labelled, real

_ROUND = {log_id: log for log_id, log in REAL_MANIFEST.items() if log.get("heldout_round") == 19}


def test_round19_is_folded_into_work():
    assert sorted(_ROUND) == [f"h19{n:03d}" for n in range(1, 8)]
    assert all(log["split"] == "work" for log in _ROUND.values())
    assert Counter(log["kind"] for log in _ROUND.values())["unknown"] == 2
    assert sum(not log["crashed"] for log in _ROUND.values()) == 4
    assert sum(log["phase_in_log"] for log in _ROUND.values()) == 3
    assert "user-elided" in _ROUND["h19007"]["paste"]


# the logs cdf986d read as labelled (None: unknown or healthy)
@pytest.mark.parametrize(("log_id", "signature"), [
    ("h19001", None),   # one rank's IndexError in SamplingBatchInfo (cut-start), the launcher's sigquit
    ("h19003", None),   # a DFLASH spec-v2 scheduler traceback cut before its exception line
    ("h19004", None),   # healthy: uvicorn up, /model_info 200, a prefill batch (a JIT build's output cut)
    ("h19005", None),   # healthy: slime's rollout end, the engine's /abort_request and cache flushes
    ("h19006", None),   # healthy: two startup lines, the decode graph capture begun and ended
    ("h19007", None),   # healthy: a patched build's registration warnings, weights loaded
])
def test_round19_logs_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


# --- h19002: transformers finds none of a multimodal checkpoint's processor files -------------------------
# transformers 4.56.1 asks cached_files for preprocessor_config.json and processor_config.json with missing
# ones allowed; it answers None when neither is there (utils/hub.py:445 a folder, :590 the Hub or the cache),
# get_image_processor_dict indexes that None (image_processing_base.py:347) and re-raises the TypeError as
# "Can't load image processor for 'X'" (:355); the feature extractor's and video processor's loaders alike

_TF = "/usr/lib/python3.10/site-packages/transformers"
_LOOKUP = ("[2025-09-17 20:03:10 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           f'  File "{_TF}/image_processing_base.py", line 347, in get_image_processor_dict\n'
           "    resolved_image_processor_file = resolved_image_processor_files[0]\n"
           "TypeError: 'NoneType' object is not subscriptable\n\n"
           "During handling of the above exception, another exception occurred:\n\n"
           "Traceback (most recent call last):\n"
           '  File "/usr/lib/python3.10/site-packages/sglang/srt/managers/scheduler.py", line 607, in '
           "init_tokenizer\n    self.processor = get_processor(\n"
           f'  File "{_TF}/image_processing_base.py", line 354, in get_image_processor_dict\n'
           "    raise OSError(\n")
_CANT_LOAD = ("OSError: Can't load image processor for '/models/Llama-4-Scout-w4a16'. If you were trying to "
              "load it from 'https://huggingface.co/models', make sure you don't have a local directory with "
              "the same name. Otherwise, make sure '/models/Llama-4-Scout-w4a16' is the correct path to a "
              "directory containing a preprocessor_config.json file\n")


def test_a_processor_lookup_that_found_no_file_is_model_not_found():
    assert_reads_as_labelled("h19002", "processor_files_missing")
    assert "preprocessor_config.json" in real("h19002").suggestion
    # a paste cut before the re-raised OSError (h19002's form)
    cut = diagnose(_LOOKUP)
    assert (cut.crashed, cut.kind, cut.phase, cut.signature) == (True, "model_not_found", "launch",
                                                                 "processor_files_missing")
    # the whole chain: the OSError says it, and the advice names the processor's files
    whole = diagnose(_LOOKUP + _CANT_LOAD)
    assert (whole.crashed, whole.kind, whole.phase) == (True, "model_not_found", "launch")
    assert "preprocessor_config.json" in whole.suggestion
    # the feature extractor's loader, as Python 3.11 prints it (a caret line under the index)
    audio = diagnose(_LOOKUP.replace("image_processing_base.py\", line 347, in get_image_processor_dict\n"
                                     "    resolved_image_processor_file = resolved_image_processor_files[0]\n",
                                     "feature_extraction_utils.py\", line 523, in get_feature_extractor_dict\n"
                                     "    resolved_feature_extractor_file = resolved_feature_extractor_files[0]\n"
                                     "                                      ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~^^^\n"))
    assert (audio.kind, audio.signature) == ("model_not_found", "processor_files_missing")


def test_other_none_indexing_and_other_processor_errors_are_not_a_missing_file():
    # the same TypeError in SGLang's own code: nothing says a file is missing
    own = diagnose("[2025-09-17 20:03:10 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                   '  File "/usr/lib/python3.10/site-packages/sglang/srt/managers/scheduler.py", line 607, in '
                   "init_tokenizer\n    self.processor = processors[0]\n"
                   "TypeError: 'NoneType' object is not subscriptable\n")
    assert own.kind != "model_not_found" and own.signature != "processor_files_missing"
    # the lookup's frame with another failure: the file is there but is no JSON (image_processing_base.py:370)
    bad_json = diagnose(_LOOKUP.split("TypeError")[0]
                        + "OSError: It looks like the config file at '/m/preprocessor_config.json' is not a valid "
                          "JSON file.\n")
    assert bad_json.signature != "processor_files_missing"


def test_transformers_reraises_a_missing_processor_file_as_cant_load():
    wheel = ("transformers", "4.56.1")
    assert_in_library_wheel(*wheel, "transformers/image_processing_base.py",
                            "                resolved_image_processor_file = resolved_image_processor_files[0]\n"
                            "            except OSError:\n")
    assert_in_library_wheel(*wheel, "transformers/image_processing_base.py",
                            "f\"Can't load image processor for '{pretrained_model_name_or_path}'.")
    assert_in_library_wheel(*wheel, "transformers/feature_extraction_utils.py",
                            "                resolved_feature_extractor_file = resolved_feature_extractor_files[0]\n")
    assert_in_library_wheel(*wheel, "transformers/video_processing_utils.py",
                            "                resolved_video_processor_file = resolved_video_processor_files[0]\n")
    assert_in_library_wheel(*wheel, "transformers/utils/hub.py",
                            "    resolved_files = None if len(resolved_files) == 0 else resolved_files\n")
