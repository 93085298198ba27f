"""Held-out round 82 (issue 24): a running server's online weight update; transformers refusing a config's name it
ships; SGLang Diffusion's FSDP checkpoint loader.

Round 82 (h82001-h82011; excerpts of SGLang, GPUStack and MiniCPM-V-CookBook threads) was measured once on main at
1fcf800 (with the round's logs, 7060f8f): crashed 11/11, kind 10/11, phase 5/7. docs/diagnosis.md, "Held-out round
82", tells the round. The three misses were ddlab's:

- h82003, "Start update_weights. Load format=auto" and "Update engine weights online from disk begin. avail mem=..."
  before the loader's lines and shard bars: the tokenizer manager and the model runner write them only for an update
  of a running server (0.5.8.post1 managers/tokenizer_manager.py:1352, model_executor/model_runner.py:1028), so they
  mark serving and the load lines after them are the update's (WEIGHT_UPDATE, diagnosis/serving_lines.py).
- h82007, "ValueError: 'qwen3_asr' is already used by a Transformers config, pick another name.": transformers'
  AutoConfig.register refusing a model type it ships (4.56.1 models/auto/configuration_auto.py:1037, 5.6.0 :138),
  dependency_mismatch as its model-class twin (crashes/kinds/packages.py).
- h82008, a CUDA OOM under fsdp_load.py's maybe_load_fsdp_model and load_model_from_full_model_state_dict (0.5.8.post1
  multimodal_gen/runtime/loader/fsdp_load.py:78, :147, :230): the DiT's checkpoint being loaded, load_weights as the
  component loaders' frames (_DIFFUSION_LOAD, crashes/frames.py).
Each positive test fails on 7060f8f.
"""

from __future__ import annotations

import pytest

from fieldkit import KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, \
    folded_round, reads, real, said

_IDS = folded_round(REAL_MANIFEST, 82)


def test_round82_is_folded_into_work_with_nothing_disputed():
    assert _IDS == [f"h820{n:02d}" for n in range(1, 12)]
    assert disputed(REAL_MANIFEST, _IDS) == []
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize(("log_id", "signature"), [
    ("h82003", None), ("h82007", "dependency_mismatch"), ("h82008", "cuda_oom"),
], ids=["h82003", "h82007", "h82008"])
def test_the_rounds_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


def test_h82003_h82008_read_at_their_labelled_phases():
    assert real("h82003").phase == "serving"
    assert real("h82008").phase == "load_weights"


# --- h82003: an online weight update of a running server -----------------------------------------------------------

_BARS = "".join(f"Loading safetensors checkpoint shards:  {p}% Completed | {n}/4 [00:0{n}<00:04,  1.35s/it]\n"
                for n, p in ((0, 0), (1, 25), (2, 50)))
_UPDATE_04 = ("[2025-06-01 10:00:00] Start update_weights. Load format=auto\n"
              "[2025-06-01 10:00:00 TP0] Update engine weights online from disk begin. avail mem=30.12 GB\n"
              "[2025-06-01 10:00:00 TP1] Update engine weights online from disk begin. avail mem=30.10 GB\n"
              + _BARS)
_STARTED = ("[2025-06-01 09:58:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B')\n"
            "[2025-06-01 09:58:02 TP0] Load weight begin. avail mem=78.50 GB\n"
            "[2025-06-01 09:58:30 TP0] Load weight end. type=Qwen3ForCausalLM, avail mem=62.10 GB\n"
            "[2025-06-01 09:59:10] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)\n"
            "[2025-06-01 09:59:20] The server is fired up and ready to roll!\n")


# 0.4.10.post2's lines under TP ranks before the bars, the same after a start-up that reached ready, the model
# runner's line alone (an Engine's call or the expert rebalancer's reload), the tokenizer manager's alone (cut)
@pytest.mark.parametrize("text", [
    _UPDATE_04,
    _STARTED + _UPDATE_04,
    "[2026-02-02 01:12:24 TP0] Update engine weights online from disk begin. avail mem=22.72 GB\n"
    "[2026-02-02 01:12:24 TP0] Using ModelOptModelLoader due to ModelOpt quantization config.\n" + _BARS,
    "[2026-02-02 01:12:24] Start update_weights. Load format=dummy\n" + _BARS,
], ids=["0.4-tp", "after-ready", "runner-line", "tokenizer-line"])
def test_an_online_weight_update_is_serving(text):
    assert reads(text) == (False, None, "serving")


# near misses: the start-up's own load (its "Load weight begin"), the user's curl of the endpoint with the bars
# (no server line), a user's prose about the update
@pytest.mark.parametrize("text", [
    "[2025-06-01 09:58:02 TP0] Load weight begin. avail mem=78.50 GB\n" + _BARS,
    "curl -sS http://localhost:30000/update_weights_from_disk -d '{\"model_path\": \"/data/m\"}'\n" + _BARS,
    "I started update_weights from disk and the update engine weights step loads again\n" + _BARS,
], ids=["startup-load", "curl-only", "prose"])
def test_other_loads_stay_load_weights(text):
    assert reads(text)[2] == "load_weights"


# --- h82007: transformers refusing a config's name it ships --------------------------------------------------------

_SITE = "/usr/local/lib/python3.12/site-packages/"


def _frame(path: str, line: int, func: str, code: str, root: str = _SITE) -> str:
    return f'  File "{root}{path}", line {line}, in {func}\n    {code}\n'


_REGISTER_0456 = ("Traceback (most recent call last):\n"
                  + _frame("sglang/srt/configs/qwen3_asr.py", 167, "<module>",
                           'AutoConfig.register("qwen3_asr", Qwen3ASRConfig)')
                  + _frame("transformers/models/auto/configuration_auto.py", 1350, "register",
                           "CONFIG_MAPPING.register(model_type, config, exist_ok=exist_ok)")
                  + _frame("transformers/models/auto/configuration_auto.py", 1037, "register",
                           "raise ValueError(f\"'{key}' is already used by a Transformers config, pick another "
                           "name.\")"))


# transformers 4.56.1's frames under SGLang's import, 5.6.0's (:439, :138) with another model type, the line alone
@pytest.mark.parametrize("text", [
    _REGISTER_0456 + "ValueError: 'qwen3_asr' is already used by a Transformers config, pick another name.\n",
    _REGISTER_0456.replace("line 1350", "line 439").replace("line 1037", "line 138")
    + "ValueError: 'deepseek_v32' is already used by a Transformers config, pick another name.\n",
    "ValueError: 'kimi_vl' is already used by a Transformers config, pick another name.\n",
], ids=["4.56.1", "5.6.0", "line-alone"])
def test_a_config_name_transformers_ships_is_dependency_mismatch(text):
    assert said(text) == (True, "dependency_mismatch", "dependency_mismatch")


# near misses: another kind of name clash (a processor's), a user's prose, another message of register
@pytest.mark.parametrize("text", [
    "ValueError: 'qwen3_asr' is already used by a Transformers processor\n",
    "it seems qwen3_asr is already used by transformers, so I renamed the config\n",
    "ValueError: The config you are passing has a `model_type` attribute that is not consistent with the model type "
    "you passed (config has qwen3 and you passed qwen3_asr. Fix one of those so they match!\n",
], ids=["processor", "prose", "other-message"])
def test_other_texts_are_not_a_config_name_clash(text):
    assert said(text)[1] != "dependency_mismatch"


# --- h82008: SGLang Diffusion's FSDP checkpoint loader -------------------------------------------------------------

_GEN = "/usr/local/lib/python3.12/dist-packages/sglang/multimodal_gen/runtime/"
_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 150.00 MiB. GPU 0 has a total capacity of "
        "47.37 GiB of which 32.88 MiB is free.\n")
_FSDP_0523 = (_frame("loader/fsdp_load.py", 471, "maybe_load_fsdp_model", "load_model_from_full_model_state_dict(",
                     _GEN)
              + _frame("loader/fsdp_load.py", 759, "load_model_from_full_model_state_dict",
                       "full_tensor = full_tensor.to(", _GEN))


# 0.5.8.post1's two frames (h82008's form, under a header), 0.5.23's, 0.5.23's inner frame alone (a cut paste)
@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n"
    + _frame("loader/fsdp_load.py", 147, "maybe_load_fsdp_model", "load_model_from_full_model_state_dict(", _GEN)
    + _frame("loader/fsdp_load.py", 284, "load_model_from_full_model_state_dict",
             "sharded_tensor = torch.empty_like(", _GEN) + _OOM,
    "Traceback (most recent call last):\n" + _FSDP_0523 + _OOM,
    _frame("loader/fsdp_load.py", 800, "load_model_from_full_model_state_dict", "sharded_tensor = torch.empty_like(",
           _GEN) + _OOM,
], ids=["0.5.8.post1", "0.5.23", "inner-frame"])
def test_the_fsdp_checkpoint_load_is_load_weights(text):
    assert reads(text) == (True, "cuda_oom", "load_weights")


# near misses: the same frames under a stage's forward (a request's lazy load: serving's), another function of
# fsdp_load.py (its sharding helper), a file of the same name outside SGLang Diffusion
@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n"
    + _frame("pipelines_core/stages/denoising.py", 1238, "forward", "self._prepare_denoising_loop(batch)", _GEN)
    + _FSDP_0523 + _OOM,
    "Traceback (most recent call last):\n"
    + _frame("loader/fsdp_load.py", 200, "shard_model", "fully_shard(m, **fsdp_kwargs)", _GEN) + _OOM,
    "Traceback (most recent call last):\n"
    + _frame("mytrainer/loader/fsdp_load.py", 40, "load_model_from_full_model_state_dict",
             "sharded_tensor = torch.empty_like(", "/home/u/") + _OOM,
], ids=["under-forward", "shard_model", "other-package"])
def test_other_frames_are_not_the_fsdp_checkpoint_load(text):
    assert reads(text)[2] != "load_weights"


# --- the texts cited from wheels -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang", "0.4.10.post2", "sglang/srt/managers/tokenizer_manager.py", 996,
     'logger.info("Start update_weights. Load format=%s", obj.load_format)'),
    ("sglang", "0.4.10.post2", "sglang/srt/model_executor/model_runner.py", 726,
     'f"Update engine weights online from disk begin. "'),
    ("sglang", "0.5.8.post1", "sglang/srt/managers/tokenizer_manager.py", 1352,
     'logger.info("Start update_weights. Load format=%s", obj.load_format)'),
    ("sglang", "0.5.8.post1", "sglang/srt/model_executor/model_runner.py", 1028,
     'f"Update engine weights online from disk begin. "'),
    ("sglang", "0.5.8.post1", "sglang/srt/model_executor/model_runner.py", 1005, "self.update_weights_from_disk("),
    ("sglang", "0.5.8.post1", "sglang/srt/entrypoints/http_server.py", 789,
     "async def update_weights_from_disk(obj: UpdateWeightFromDiskReqInput, request: Request):"),
    ("sglang", "0.5.8.post1", "sglang/srt/managers/scheduler_update_weights_mixin.py", 50,
     "success, message = self.tp_worker.update_weights_from_disk(recv_req)"),
    ("sglang", "0.5.23", "sglang/srt/managers/tokenizer_manager.py", 2297,
     'logger.info("Start update_weights. Load format=%s", obj.load_format)'),
    ("sglang", "0.5.23", "sglang/srt/model_executor/model_runner_components/weight_updater.py", 188,
     'f"Update engine weights online from disk begin. "'),
    ("sglang", "0.5.23", "sglang/srt/configs/qwen3_asr.py", 167,
     'AutoConfig.register("qwen3_asr", Qwen3ASRConfig, exist_ok=True)'),
    ("transformers", "4.56.1", "transformers/models/auto/configuration_auto.py", 1037,
     "raise ValueError(f\"'{key}' is already used by a Transformers config, pick another name.\")"),
    ("transformers", "4.56.1", "transformers/models/auto/configuration_auto.py", 1350,
     "CONFIG_MAPPING.register(model_type, config, exist_ok=exist_ok)"),
    ("transformers", "5.6.0", "transformers/models/auto/configuration_auto.py", 138,
     "raise ValueError(f\"'{key}' is already used by a Transformers config, pick another name.\")"),
    ("transformers", "5.6.0", "transformers/models/auto/configuration_auto.py", 439,
     "CONFIG_MAPPING.register(model_type, config, exist_ok=exist_ok)"),
    ("sglang", "0.5.8.post1", "sglang/multimodal_gen/runtime/loader/fsdp_load.py", 78, "def maybe_load_fsdp_model("),
    ("sglang", "0.5.8.post1", "sglang/multimodal_gen/runtime/loader/fsdp_load.py", 147,
     "load_model_from_full_model_state_dict("),
    ("sglang", "0.5.8.post1", "sglang/multimodal_gen/runtime/loader/fsdp_load.py", 230,
     "def load_model_from_full_model_state_dict("),
    ("sglang", "0.5.8.post1", "sglang/multimodal_gen/runtime/loader/fsdp_load.py", 284,
     "sharded_tensor = torch.empty_like("),
    ("sglang", "0.5.8.post1", "sglang/multimodal_gen/runtime/loader/component_loader.py", 728,
     "model = maybe_load_fsdp_model("),
    ("sglang", "0.5.23", "sglang/multimodal_gen/runtime/loader/fsdp_load.py", 261, "def maybe_load_fsdp_model("),
    ("sglang", "0.5.23", "sglang/multimodal_gen/runtime/loader/fsdp_load.py", 471,
     "load_model_from_full_model_state_dict("),
    ("sglang", "0.5.23", "sglang/multimodal_gen/runtime/loader/fsdp_load.py", 585,
     "def load_model_from_full_model_state_dict("),
    ("sglang", "0.5.23", "sglang/multimodal_gen/runtime/loader/fsdp_load.py", 759, "full_tensor = full_tensor.to("),
    ("sglang", "0.5.23", "sglang/multimodal_gen/runtime/loader/fsdp_load.py", 800,
     "sharded_tensor = torch.empty_like("),
], ids=lambda v: str(v))
def test_each_cited_line_is_in_its_wheel(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
