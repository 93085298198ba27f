"""The rule that held-out round 25 of the vLLM corpus (vv01-vv06, measured once at afbc9a0 with its logs
52286b1) showed missing: get_config's refusal of a model with neither config.json nor params.json as the
releases before its rewrite word it (vv06); and its other miss read as a disputed label (vv05).

The rule is general and cited from the source that prints its text (vLLM's wheels 0.6.3.post1, 0.6.4.post1 and
0.7.3): the log that showed it is one case, a text written from the source in another form is the other, and a
text beside it that the rule must not take is a third. The source checks skip where the wheels are not unpacked
(CI); the readings run everywhere.
"""

from __future__ import annotations

from fieldkit import read_log, reads, vllm_signature, vllm_traceback, wheel_text_test

SOURCES = [
    # get_config with config_format "auto", neither config.json nor params.json found (the older wording)
    ("0.6.3.post1", "vllm/transformers_utils/config.py",
     'raise ValueError(f"No supported config format found in {model}")'),
    ("0.6.4.post1", "vllm/transformers_utils/config.py",
     'raise ValueError(f"No supported config format found in {model}")'),
    ("0.7.3", "vllm/transformers_utils/config.py",
     'raise ValueError(f"No supported config format found in {model}.")'),
    # ... and the refusal beside it, of a config_format it has no branch for
    ("0.7.3", "vllm/transformers_utils/config.py",
     'raise ValueError(f"Unsupported config format: {config_format}")'),
]


test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)


# --- vv06: get_config finding no config of a supported format ------------------------------------------------

_GET_CONFIG = ("vllm/transformers_utils/config.py", 263, "get_config", 'raise ValueError(f"No supported config '
               'format found in {model}.")')
_ENGINE = "ERROR 02-17 19:14:36 engine.py:389] "


def test_no_supported_config_format_is_model_not_found():
    """vv06: the API process's traceback tail and the MQLLMEngine's log line, "No supported config format found
    in mistralai/Mistral-7B-v0.1" (a release before 0.7.3: no final period); read unknown before."""
    assert reads(read_log("vv06.log")) == (True, "model_not_found", "launch")
    assert vllm_signature(read_log("vv06.log")) == "vllm_no_config_file"
    whole = vllm_traceback(_GET_CONFIG, exc="ValueError: No supported config format found in /models/llama-3-8b.",
                           head=_ENGINE)
    assert reads(whole)[:2] == (True, "model_not_found")
    assert vllm_signature(whole) == "vllm_no_config_file"


def test_an_unsupported_config_format_is_not_it():
    """A config_format given that get_config has no branch for is another refusal (of an argument)."""
    other = vllm_traceback(_GET_CONFIG[:3] + ('raise ValueError(f"Unsupported config format: {config_format}")',),
                           exc="ValueError: Unsupported config format: ConfigFormat.YAML", head=_ENGINE)
    assert vllm_signature(other) != "vllm_no_config_file"


# --- vv05: the label disputed, not a rule ----------------------------------------------------------------------

def test_an_ascend_device_order_refusal_names_no_kind():
    """vv05: Ascend's runtime refusing ASCEND_RT_VISIBLE_DEVICES "0,2,4,6,1,3,5,7" ("it must be configured in
    ascending order") inside torch_npu's set_device: an environment variable read by the NPU runtime, not the
    command line or a server argument (bad_argument), so labelled bad_argument, disputed to unknown in the
    manifest. ddlab reads it crashed, kind unknown, at launch."""
    assert reads(read_log("vv05.log")) == (True, "unknown", "launch")
