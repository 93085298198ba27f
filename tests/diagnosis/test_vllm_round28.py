"""The rules that held-out round 28 of the vLLM corpus (w2801-w2820, measured once at 60f6dc1 with its logs
90f7b89) showed missing: ArcticInference's draft check (w2802), a pydantic config class other than the ones
read before refusing a flag (w2804, LoRAConfig), a model's load_weights not finding a checkpoint name that
is no weight/bias/scale (w2805), the HPU runner's graph warm-up as a phase (w2817), an attention
backend with no encoder attention (w2818), and docker compose interleaving another service's lines with
vLLM's (w2811).

Each rule is general and cited from the source that prints its text (vLLM's wheels; ArcticInference's sdist
0.0.8): the log that showed it is one case, a text written from the source in another form is the other, and
a text beside it that the rule must not take is a third. The source checks skip where the wheels are not
unpacked (CI); the readings run everywhere.
"""

from __future__ import annotations

from fieldkit import library_text_test, read_log, reads, vllm_signature, vllm_traceback, wheel_text_test

_SKIP = "Set ARCTIC_INFERENCE_SKIP_SPEC_MODEL_CHECK=1 to skip this assertion."
SOURCES = [
    # the pydantic config classes EngineArgs builds: LoRAConfig, and the check w2804 hit (V0's wording)
    ("0.34.0", "vllm/config/lora.py", "@config(config=ConfigDict(arbitrary_types_allowed=True))\n"
                                      "class LoRAConfig:"),
    ("0.34.0", "vllm/engine/arg_utils.py", "lora_config = (\n            LoRAConfig("),
    ("0.7.3", "vllm/config.py", 'f"max_lora_rank ({self.max_lora_rank}) must be one of "'),
    # a model's load_weights looking the checkpoint name up
    ("0.7.3", "vllm/model_executor/models/llama.py", "                param = params_dict[name]"),
    ("0.34.0", "vllm/model_executor/models/llama4.py", "param = params_dict[name]"),
    # the HPU runner's graph warm-up
    ("0.7.3", "vllm/worker/hpu_model_runner.py", "    def warmup_graphs(self,"),
    ("0.7.3", "vllm/worker/hpu_model_runner.py", "self.warmup_graphs("),
    # a decoder-only attention impl refusing the encoder's and the cross-attention's types
    ("0.7.3", "vllm/attention/backends/hpu_attn.py",
     'raise NotImplementedError("Encoder self-attention and "\n'
     '                                      "encoder/decoder cross-attention "\n'
     '                                      "are not implemented for "\n'
     '                                      "HPUAttentionImpl")'),
    ("0.6.4.post1", "vllm/attention/backends/hpu_attn.py", '"HPUAttentionImpl")'),
    ("0.34.0", "vllm/v1/attention/backends/flashinfer.py",
     '"are not implemented for "\n                "FlashInferImpl"'),
]

test_each_rules_text_is_vllms_own = wheel_text_test(SOURCES)

test_each_rules_library_text_is_in_its_wheel = library_text_test([
    ("arctic_inference", "0.0.8", "arctic_inference/vllm/spec_dec/arctic_proposer.py",
     f'"{_SKIP}"\n                )\n                assert False'),
])


# --- w2802: ArcticInference's draft check, one ERROR line and a bare assert ------------------------------

def test_arctic_inferences_draft_check_is_draft_incompatible():
    """w2802: one ERROR line of ArcticInference's proposer, "Draft model name ... does not match base model
    name ... Set ARCTIC_INFERENCE_SKIP_SPEC_MODEL_CHECK=1 to skip this assertion." (an older wording of the
    check); the proposer's `assert False` follows it in every release, so the start ends there; read not
    crashed before. 0.0.8's wording reads the same."""
    assert reads(read_log("w2802.log")) == (True, "draft_incompatible", "load_weights")
    assert vllm_signature(read_log("w2802.log")) == "vllm_arctic_spec_check"
    newer = ("ERROR 09-01 10:00:00 [arctic_proposer.py:82] Draft model trained with base model architectures "
             "['LlamaForCausalLM'] does not match the base model architecture Qwen3ForCausalLM in the vLLM "
             f"config. {_SKIP}\n")
    assert reads(newer, "vllm")[:2] == (True, "draft_incompatible")


def test_another_arctic_line_is_not_the_check():
    """The proposer's other refusals (an architecture it does not support) name no skip: not this rule."""
    other = ("ERROR 09-01 10:00:00 [arctic_proposer.py:64] Draft model architecture ['LlamaForCausalLM'] is "
             "not supported by Arctic Speculator.\n")
    assert vllm_signature(other) != "vllm_arctic_spec_check"


# --- w2804: a pydantic config class refusing a flag ---------------------------------------------------------

_LORA = ("vllm/engine/arg_utils.py", 1187, "create_engine_config", "lora_config = LoRAConfig(")


def test_lora_configs_validation_error_is_bad_argument():
    """w2804: the tail of create_engine_config building LoRAConfig, "pydantic_core._pydantic_core.
    ValidationError: 1 validation error for LoRAConfig" and its "Value error, max_lora_rank (1) must be one
    of (8, 16, ...)", every line with a trailing space; read unknown before."""
    assert reads(read_log("w2804.log")) == (True, "bad_argument", "launch")
    assert vllm_signature(read_log("w2804.log")) == "vllm_config_invalid"
    mm = vllm_traceback(("vllm/engine/arg_utils.py", 1300, "create_model_config", "return ModelConfig("),
                        exc="pydantic_core._pydantic_core.ValidationError: 1 validation error for "
                            "MultiModalConfig")
    assert reads(mm, "vllm")[:2] == (True, "bad_argument")


def test_another_libraries_validation_error_is_not_a_config():
    """A pydantic model of a request (the OpenAI server's) is no engine config."""
    request = vllm_traceback(_LORA, exc="pydantic_core._pydantic_core.ValidationError: 1 validation error "
                                        "for ChatCompletionRequest")
    assert vllm_signature(request) != "vllm_config_invalid"


# --- w2805: load_weights' params_dict[name] not finding a checkpoint name -------------------------------

_LOOKUP = ("vllm/model_executor/models/apertus.py", 466, "load_weights", "param = params_dict[name]")


def test_a_name_load_weights_cannot_find_is_weights_unreadable():
    """w2805: the engine core dying of "KeyError: 'layers.20.mlp.act_fn.beta'" raised at load_weights'
    `param = params_dict[name]` (an activation's buffer the checkpoint has and this Apertus code lacks),
    the process traceback after it cut; read unknown before (the name ends in none of the weight names)."""
    assert reads(read_log("w2805.log")) == (True, "weights_unreadable", "load_weights")
    assert vllm_signature(read_log("w2805.log")) == "vllm_params_lookup"
    other = vllm_traceback(("vllm/model_executor/models/qwen2.py", 500, "load_weights",
                            "param = params_dict[name]"),
                           exc="KeyError: 'model.layers.0.self_attn.rotary_emb.inv'")
    assert reads(other, "vllm")[:2] == (True, "weights_unreadable")


def test_a_keyerror_elsewhere_is_not_the_lookup():
    """The same KeyError raised in another frame below load_weights (a dict of the config) is not it."""
    below = vllm_traceback(_LOOKUP, ("vllm/config/model.py", 300, "get_hf_config", "return self.cfg[key]"),
                           exc="KeyError: 'layers.20.mlp.act_fn.beta'")
    assert vllm_signature(below) != "vllm_params_lookup"


# --- w2817: the HPU runner's graph warm-up is the graph phase ----------------------------------------------

def test_the_hpu_graph_warmup_is_graph_capture():
    """w2817: vllm-gaudi's warmup_multimodal_graphs frame over a ModuleNotFoundError of vLLM's own module
    (kind right before); its phase read launch before. V0's warmup_graphs reads the same."""
    assert reads(read_log("w2817.log")) == (True, "dependency_mismatch", "graph_capture")
    v0 = vllm_traceback(("vllm/worker/hpu_model_runner.py", 1645, "warmup_model", "self.warmup_graphs("),
                        ("vllm/worker/hpu_model_runner.py", 1500, "warmup_graphs", "self.warmup_scenario("),
                        exc="RuntimeError: synStatus=26 [Generic failure] Device acquire failed.")
    assert reads(v0, "vllm")[2] == "graph_capture"


def test_a_warmup_without_graphs_is_not_the_capture():
    """A warm-up of something else (the sampler's) is no graph capture."""
    other = vllm_traceback(("vllm/v1/worker/gpu_worker.py", 400, "load_model",
                            "self.model_runner.load_model()"),
                           ("vllm/v1/worker/gpu_model_runner.py", 3000, "warmup_sampler",
                            "self._dummy_sampler()"),
                           exc="RuntimeError: boom")
    assert reads(other, "vllm")[2] != "graph_capture"


# --- w2818: an attention backend with no encoder attention -------------------------------------------------

_ENC = "Encoder self-attention and encoder/decoder cross-attention are not implemented for "


def test_no_encoder_attention_is_kernel_config_unsupported():
    """w2818: the message alone above V0's engine traceback (cut at _init_executor); read unknown before.
    V1's FlashInfer impl's NotImplementedError reads the same."""
    assert reads(read_log("w2818.log"))[:2] == (True, "kernel_config_unsupported")
    assert vllm_signature(read_log("w2818.log")) == "vllm_encoder_attention"
    v1 = vllm_traceback(("vllm/v1/attention/backends/flashinfer.py", 1028, "__init__",
                         "raise NotImplementedError("), exc="NotImplementedError: " + _ENC + "FlashInferImpl")
    assert reads(v1, "vllm")[:2] == (True, "kernel_config_unsupported")


def test_another_not_implemented_attention_is_not_it():
    """Another refusal of the same impl (a sliding window) says nothing of encoder attention."""
    other = vllm_traceback(("vllm/attention/backends/hpu_attn.py", 150, "__init__", "raise ValueError("),
                           exc="NotImplementedError: Sliding window is not supported for HPUAttentionImpl")
    assert vllm_signature(other) != "vllm_encoder_attention"


# --- w2811: docker compose interleaving the vLLM service with another's ------------------------------------

_LLM = "llm-1       | ERROR 07-03 17:41:17 [serving_chat.py:200] "
_WEB = "backend-1   | "


def test_another_compose_services_lines_are_not_vllms():
    """w2811: docker compose's output, the vLLM service's chat-handler traceback (every line under
    "[serving_chat.py:200]") interleaved line by line with another service's exception group; read a crash
    before (the other service's cut group taken for the log's last traceback). Any names read the same."""
    assert reads(read_log("w2811.log")) == (False, "request_error", "serving")
    handler = vllm_traceback(("vllm/entrypoints/openai/serving_chat.py", 190, "create_chat_completion",
                              "request_prompts, engine_prompts = await self._preprocess_chat("),
                             exc="ValueError: This model's maximum context length is 4096 tokens.",
                             head="vllm-server-1  | ERROR 07-03 17:41:17 [serving_chat.py:200] ").splitlines()
    other = ["ui-1           | Traceback (most recent call last):",
             'ui-1           |   File "/app/main.py", line 10, in route',
             "ui-1           |     await handler()"]
    mixed = [line for pair in zip(handler, other + [""] * len(handler)) for line in pair if line]
    assert reads("\n".join(mixed) + "\n", "vllm")[:2] == (False, "request_error")


def test_a_single_compose_service_keeps_all_its_lines():
    """One service (or services none of which shows vLLM's stamp) keeps every line: the engine core's
    crash under one compose prefix is still a crash."""
    crash = "\n".join("vllm-1  | " + line for line in vllm_traceback(
        ("vllm/v1/engine/core.py", 700, "run_engine_core", "raise e"),
        exc="RuntimeError: CUDA error: an illegal memory access was encountered").splitlines()) + "\n"
    assert reads(crash, "vllm")[:2] == (True, "cuda_illegal_access")
    web = _WEB + "Traceback (most recent call last):\n" + _WEB + "RuntimeError: boom\n"
    assert reads("db-1        | ready\n" + web, "vllm")[0] is True
