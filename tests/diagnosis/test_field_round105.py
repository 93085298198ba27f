"""Held-out round 105 (issue 24): DeepSeek's score-correction bias as a checkpoint tensor name; 0.1.x llava's caught
image-encoding error.

Round 105 (h105001-h105010; SGLang issue threads) was measured once on main at 61416885: crashed 10/10, kind 8/10,
phase 3/3. docs/diagnosis.md, "Held-out round 105", tells the round.

- h105005 (sgl-project/sglang#3209; the frames are 0.4.2's, model_loader/__init__.py:22, model_loader/loader.py:605):
  ShardedStateLoader.load_model looks each tensor name of the sharded checkpoint up in the model's state dict
  ("param_data = state_dict[key].data") and finds no 'model.layers.10.mlp.experts.e_score_correction_bias': SGLang
  0.4.2's DeepSeek model holds the bias in its gate (models/deepseek_v2.py:108) and its experts' copy as
  correction_bias (layers/moe/fused_moe_triton/layer.py:288), where vLLM's FusedMoE names it e_score_correction_bias
  (vllm 0.7.0 model_executor/layers/fused_moe/layer.py:281): a checkpoint the model cannot read, weights_unreadable.
  ddlab's tensor-name rule (crashes/kinds/weights.py) ended a name only in the parameter suffixes it knew; it knows
  the score-correction bias now. Ddlab's miss, fixed; the positive tests fail on the round 104 commit.
- h105010 (sgl-project/sglang#273; 0.1.x): "RuntimeError in llava image encoding: ..." and two more prints. 0.1.13's
  llava forward catches the RuntimeError of filling the image placeholder, prints it, the embeds' shape and the
  offsets, and goes on to the language model (models/llava.py:219-233): the request is served with its placeholder
  unfilled, no error is answered. Labelled request_error; disputed -> None (kind_disputed, second_look).
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL, REAL_MANIFEST, VLLM_WHEELS, assert_at_line, assert_reads_as_labelled, \
    disputed, folded_round, real, said

_IDS = folded_round(REAL_MANIFEST, 105)


def test_round105_is_folded_into_work_with_one_dispute_and_none_left():
    assert _IDS == [f"h1050{n:02d}" for n in range(1, 11)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h105010"]
    assert REAL_MANIFEST["h105010"]["kind_disputed"] == ["request_error", None]
    assert "phase_disputed" not in REAL_MANIFEST["h105010"]
    assert REAL_MANIFEST["h105010"]["second_look"]
    assert not [i for i in _IDS if i in KNOWN_MISSES["real"]]


def test_h105005_reads_as_labelled():
    assert_reads_as_labelled("h105005", "weight_name_unknown")
    assert real("h105005").phase == "load_weights"


def test_h105010_reads_as_the_second_look():
    found = real("h105010")
    assert (found.crashed, found.kind) == (False, None)


# --- h105005: the score-correction bias as a checkpoint's tensor name -----------------------------------------------

_ROOT = "/sgl-workspace/sglang/python/sglang/srt/"


def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{_ROOT}{path}", line {line}, in {func}\n    {code}\n'


_SHARDED = ("Traceback (most recent call last):\n"
            + _frame("model_loader/__init__.py", 22, "get_model", "return loader.load_model(")
            + _frame("model_loader/loader.py", 605, "load_model", "param_data = state_dict[key].data"))
_PARAMS = ("Traceback (most recent call last):\n"
           + _frame("models/deepseek_v2.py", 1004, "load_weights", "param = params_dict[name]"))


# the sharded-state loader (h105005's), a model's load_weights with the gate's name, the line alone (a cut paste)
@pytest.mark.parametrize("text", [
    _SHARDED + "KeyError: 'model.layers.10.mlp.experts.e_score_correction_bias'\n",
    _PARAMS + "KeyError: 'model.layers.3.mlp.gate.e_score_correction_bias'\n",
    "KeyError: 'model.layers.61.mlp.experts.correction_bias'\n",
], ids=["sharded-state", "load_weights", "line-alone"])
def test_a_score_correction_bias_the_model_has_no_parameter_for_is_weights_unreadable(text):
    assert said(text, family="sglang")[:2] == (True, "weights_unreadable")


# near misses: the same name as a bare config key (no module path), the name under a forward frame (not a load)
@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n"
    + _frame("models/deepseek_v2.py", 104, "__init__", 'bias = kwargs["e_score_correction_bias"]')
    + "KeyError: 'e_score_correction_bias'\n",
    "Traceback (most recent call last):\n"
    + _frame("layers/moe/topk.py", 120, "forward", "bias = self.biases[name]")
    + "KeyError: 'model.layers.10.mlp.experts.e_score_correction_bias'\n",
], ids=["config-key", "forward"])
def test_other_keyerrors_are_not_a_checkpoint_name(text):
    assert said(text, family="sglang")[1] != "weights_unreadable"


# --- h105010: the llava model's caught image-encoding error ----------------------------------------------------------

def test_h105010_is_the_llava_models_three_prints():
    lines = (REAL / "h105010.log").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("RuntimeError in llava image encoding: The expanded size of the tensor (0)")
    assert lines[1:] == ["torch.Size([2758, 4096])", "0 -1"]


# --- the lines cited from the wheels --------------------------------------------------------------------------------

_CITED = [
    ("sglang", "0.4.2", "sglang/srt/model_loader/__init__.py", 22, "return loader.load_model("),
    ("sglang", "0.4.2", "sglang/srt/model_loader/loader.py", 597,
     "state_dict = self._filter_subtensors(model.state_dict())"),
    ("sglang", "0.4.2", "sglang/srt/model_loader/loader.py", 605, "param_data = state_dict[key].data"),
    ("sglang", "0.4.2", "sglang/srt/models/deepseek_v2.py", 108, "self.e_score_correction_bias = nn.Parameter("),
    ("sglang", "0.4.2", "sglang/srt/models/deepseek_v2.py", 156, "correction_bias=self.gate.e_score_correction_bias,"),
    ("sglang", "0.4.2", "sglang/srt/layers/moe/fused_moe_triton/layer.py", 288,
     "self.correction_bias = correction_bias"),
    ("sglang", "0.1.13", "sglang/srt/models/llava.py", 226, "except RuntimeError as e:"),
    ("sglang", "0.1.13", "sglang/srt/models/llava.py", 227, 'print(f"RuntimeError in llava image encoding: {e}")'),
    ("sglang", "0.1.13", "sglang/srt/models/llava.py", 232, "return self.language_model("),
]


@pytest.mark.parametrize(("package", "release", "path", "line", "text"), _CITED,
                         ids=[f"{k}-{r}:{p}:{n}" for k, r, p, n, _ in _CITED])
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)


# vLLM's FusedMoE keeps the bias under the name the checkpoint has (vllm 0.7.0, January 2025, as the thread)
def test_vllms_fused_moe_names_the_bias_e_score_correction_bias():
    source = VLLM_WHEELS / "0.7.0" / "vllm/model_executor/layers/fused_moe/layer.py"
    if not source.exists():
        pytest.skip(f"{source} is not unpacked")
    assert "self.e_score_correction_bias = e_score_correction_bias" in source.read_text().splitlines()[280]
