"""Weights: a checkpoint the loader cannot read or place.

The files are there (a missing model is ``model_not_found``) but the loader
cannot use them: a safetensors header it cannot parse (a cut download, a Git LFS
pointer instead of the tensor file), a ``torch.load`` of a file that is no
checkpoint, a tensor name the model has no parameter for (SGLang's
``load_weights`` looks every checkpoint name up in ``params_dict[name]``: a
quantized checkpoint whose names the model does not expect, a tied embedding
stored anyway), a tensor whose shape is not its parameter's (the default
loader's check, the same text in vLLM's; a layer's ``copy_`` or its narrow to
this rank's shard), keys left over after loading, a
quantization whose config file is missing. An EAGLE3 drafter's ``midlayer.*`` names stay ``draft_incompatible``.
"""

from __future__ import annotations

from ddlab.crashes.signature import NO_LATER_FRAME, Found, Signature, regex

__all__ = ["SIGNATURES", "shape_detail"]

# a fused MoE layer's quantization tensors carry the projection's prefix: w13_weight_scale_inv,
# w2_input_scale (0.5.23 layers/quantization/fp8.py:1719 registers "w2_weight_scale_inv"); a
# quantized checkpoint's scale that the layer did not register is a format it cannot place. The
# fused experts' own weights are w13_weight and w2_weight (vLLM 0.34.0 layers/fused_moe/
# unquantized_fused_moe_method.py:96, :117; 0.7.3 layers/fused_moe/layer.py:89): a name the
# checkpoint maps onto them that this rank's model has no parameter for (round 12). Ascend's W8A8 layers
# register deq_scale (vllm-ascend v0.9.2rc1 vllm_ascend/quantization/w8a8.py:74; round 14). (Round 30) A
# fused MoE layer's WNA16 (AWQ, GPTQ) tensors carry it too: w13_qweight, w2_qweight, w2_scales (0.5.23
# layers/quantization/moe_wna16.py:301, :314, :338), looked up by name (models/qwen3_5.py:2298, :2338)
# (round 105) DeepSeek's score-correction bias: the gate's e_score_correction_bias and the experts' copy, named
# correction_bias by SGLang (0.4.2 models/deepseek_v2.py:108, layers/moe/fused_moe_triton/layer.py:288) and
# e_score_correction_bias by vLLM's FusedMoE (vllm 0.7.0 layers/fused_moe/layer.py:281): a checkpoint made under the
# other name is one the model cannot place (the sharded-state loader's state_dict[key], 0.4.2
# model_loader/loader.py:605)
_TENSOR = (r"^KeyError: '(?:[\w-]+\.)+(?:(?:w\d+_)?weight|bias|(?:w\d+_)?(?:qweight|qzeros|scales?|g_idx)"
           r"|(?:w\d+_)?(?:weight_scale(?:_inv|_2)?|input_scale|weight_packed|weight_shape|[kv]_scale)"
           r"|zeros|deq_scale|(?:e_score_)?correction_bias)'(?:\n|$)")
_LOADING = r", in (?:load_weights\w*|weight_loader\w*|load_model)\s*$|params_dict\[\w+\]"
_ADVICE = ("The checkpoint's files cannot be read or placed by this model's loader: check that "
           "the download is complete (`hf download REPO` again; a file of a few hundred bytes "
           "is a Git LFS pointer, not the tensors), that `--quantization` / `--load-format` match "
           "the checkpoint, and that this SGLang release supports this checkpoint format for "
           "this architecture (a quantized variant may need a newer one).")
_SOURCES = (("0.4.10.post2", "sglang/srt/models/llama.py:621"),
            ("0.4.10.post2", "sglang/srt/models/deepseek_v2.py:2493"),
            ("0.4.10.post2", "sglang/srt/model_loader/loader.py:723"),
            ("sglang 0.4.2", "sglang/srt/model_loader/loader.py:605"),
            ("0.4.10.post2", "sglang/srt/model_loader/weight_utils.py:197"),
            ("0.5.23", "sglang/srt/model_loader/loader.py:1678"),
            ("0.5.23", "sglang/srt/model_loader/weight_utils.py:389"))

# the default weight loader's shape check, written alike by both servers (SGLang's
# model_loader/weight_utils.py copies vLLM's): a tensor whose shape is not the parameter's
_SHAPE = r"Attempted to load weight \(.{0,80}?\) into parameter \("


def shape_detail(found: Found) -> str | None:
    """The shapes the loader compared, when it was the shape check that refused."""
    said = regex(r"Attempted to load weight \((?:torch\.Size\()?(\[[^\]]*\])\)?\) into parameter "
                 r"\((?:torch\.Size\()?(\[[^\]]*\])").search(found.text)
    if not said:
        return None
    return (f"A tensor of shape {said[1]} was offered to a parameter of shape {said[2]}: the checkpoint "
            "was made for another configuration than the config.json it came with (another size, "
            "another converter; for a draft model, a conversion for another speculative method or "
            "release).")


WEIGHT_NAME = Signature(
    "weight_name_unknown", "weights_unreadable", "the checkpoint holds a tensor the model cannot place",
    (_ADVICE,),
    types=r"KeyError", patterns=(_TENSOR,), context=(_LOADING,), priority=80, phase="load_weights",
    sources=_SOURCES)

WEIGHT_NAME_ALONE = Signature(
    "weight_name_unknown_alone", "weights_unreadable", "a KeyError that names a checkpoint tensor",
    (_ADVICE,),
    types=r"KeyError", patterns=(_TENSOR,), absent=(r'File "',), priority=32, phase="load_weights",
    sources=_SOURCES)

# (round 92) pickle's "invalid load key" and UnpicklingError say only that bytes were not a pickle: a
# checkpoint's torch.load, or a message between processes. pyzmq's recv_pyobj unpickles what the socket
# received (pyzmq 26.4.0 zmq/sugar/socket.py:961 recv_pyobj, :808-830 _deserialize's load(recvd); the asyncio
# socket's zmq/_future.py:337, :360 "loaded = load(buf)" in _chain), which SGLang's processes use for every
# message (0.4.5.post2 sglang/srt/managers/tokenizer_manager.py:924, the TokenizerManager's handle_loop reading
# the detokenizer's), and multiprocessing's Connection.recv unpickles what a pipe carried (CPython 3.11.7
# Lib/multiprocessing/connection.py:251): a chain through either is an IPC message that was not a pickle
_IPC_UNPICKLE = (r"\.recv_pyobj\("
                 r"|zmq[/\\](?:_future|sugar[/\\]socket)\.py\", line \d+, in (?:_chain|_deserialize|recv_pyobj)\b"
                 r"|multiprocessing[/\\]connection\.py\", line \d+, in recv\b")

UNREADABLE = Signature(
    "weights_unreadable", "weights_unreadable", "a checkpoint file cannot be read",
    (_ADVICE,),
    patterns=(r"SafetensorError", r"Error while deserializing header",
              r"\bHeaderTooLarge\b|\bMetadataIncompleteBuffer\b|\bInvalidHeaderDeserialization\b",
              r"invalid load key", r"UnpicklingError", r"PytorchStreamReader failed reading zip archive",
              r"Weights only load failed", r"Missing keys \(.*\) in loaded state",
              r"Cannot find the config file for \w+", _SHAPE),
    absent=(_IPC_UNPICKLE,), priority=80, phase="load_weights", detail=shape_detail,
    sources=(*_SOURCES,
             ("0.4.10.post2", "sglang/srt/model_loader/weight_utils.py:650"),
             ("0.5.23", "sglang/srt/model_loader/weight_utils.py:1583"),
             ("safetensors 0.6.2 (v0.6.2)", "bindings/python/src/lib.rs:454 (Open::new: Error while "
                                            "deserializing header: ...)"),
             ("torch 2.14.1", "torch/serialization.py:1459 (_get_wo_message: Weights only load failed), "
                              ":1467, :1469"),
             ("CPython 3.12.3", "Modules/_pickle.c:6947 (load: invalid load key, '%c'.), :6951"),
             ("pyzmq 26.4.0", "zmq/_future.py:360 (_deserialize's _chain: loaded = load(buf))"),
             ("pyzmq 26.4.0", "zmq/sugar/socket.py:961 (recv_pyobj)"),
             ("sglang 0.4.5.post2", "sglang/srt/managers/tokenizer_manager.py:924"),
             ("CPython 3.11.7", "Lib/multiprocessing/connection.py:251 (Connection.recv: "
                                "_ForkingPickler.loads)"),
             ("torch 2.6.0", "caffe2/serialize/inline_container.cc:240 (PyTorchStreamReader::valid: "
                             "PytorchStreamReader failed ...; reading zip archive :160, init)")))

# (round 22) the same refusal where a layer's own weight_loader places the tensor: SGLang's loaders
# copy the checkpoint's tensor into their parameter with ``.copy_(loaded_weight)`` and no shape check
# of their own (0.5.23 layers/moe/fused_moe_triton/layer.py:879 in _load_w13, :969 in _load_w2;
# layers/linear.py:582; model_loader/weight_utils.py:1586; 0.4.10.post2 layers/moe/fused_moe_triton/
# layer.py:283), so torch's broadcast check in copy_ says it: a raising frame (the last one) that
# copies loaded_weight is a checkpoint tensor whose shape is not its parameter's (a quantized
# checkpoint loaded with another scheme, another converter's layout)
_SIZES = (r"size of tensor a \(\d+\) must match the size of tensor b \(\d+\)"
          r"|expanded size of the tensor \(\d+\) must match the existing size \(\d+\)")
_COPY_LAST_FRAME = r'\.copy_\(loaded_weight\)\s*\n' + NO_LATER_FRAME
LOADER_COPY_SHAPE = Signature(
    "loader_copy_shape", "weights_unreadable", "a checkpoint tensor does not fit its parameter",
    (_ADVICE,),
    patterns=(_SIZES,), context=(_COPY_LAST_FRAME,), priority=80, phase="load_weights",
    sources=(("0.5.23", "sglang/srt/layers/moe/fused_moe_triton/layer.py:879"),
             ("0.5.23", "sglang/srt/layers/moe/fused_moe_triton/layer.py:969"),
             ("0.5.23", "sglang/srt/layers/linear.py:582"),
             ("0.5.23", "sglang/srt/model_loader/weight_utils.py:1586"),
             ("0.4.10.post2", "sglang/srt/layers/moe/fused_moe_triton/layer.py:283"),
             ("torch 2.6.0", "aten/src/ATen/ExpandUtils.cpp:33 (infer_size_impl: The size of tensor a "
                             "({}) must match the size of tensor b ({}) at non-singleton dimension {})")))

# (round 78) the same refusal where a layer's weight_loader takes this rank's shard of the checkpoint's tensor:
# SGLang's loaders narrow loaded_weight to the rank's slice before the copy, "loaded_weight =
# loaded_weight.narrow(shard_dim, shard_size * tp_rank, shard_size)" (0.5.8 layers/moe/fused_moe_triton/layer.py:501
# in _load_w2, :428 in _load_w13; 0.4.10.post2 layers/linear.py:1254 in RowParallelLinear.weight_loader), with the
# shard's size taken from the parameter this layer built (0.5.23 takes it from the tensor, :857, :949; 0.4.10.post2's
# _load_w2 says it first in its own words, :338-341); torch's narrow refuses a slice past the tensor's end, "start
# (S) + length (L) exceeds dimension size (N)." (aten/src/ATen/native/TensorShape.cpp, narrow's TORCH_CHECK): the
# checkpoint's tensor is smaller along that dimension than the layer's shards (a quantized checkpoint's scales
# grouped for another layout, another TP split), as vLLM's loaders say it (vllm_loader_narrow). Only where the
# narrow of loaded_weight is the raising frame, inside a loader's frames
_NARROW = r"\bstart \(\d+\) \+ length \(\d+\) exceeds dimension size \(\d+\)"
_NARROW_LAST_FRAME = r'\bloaded_weight\.narrow\(.*\n' + NO_LATER_FRAME
LOADER_NARROW = Signature(
    "loader_narrow", "weights_unreadable", "a checkpoint tensor is smaller than its layer's shard",
    (_ADVICE,),
    types=r"RuntimeError", patterns=(_NARROW,),
    context=(r", in (?:weight_loader\w*|_load_\w+|load_weights\w*)\s*$", _NARROW_LAST_FRAME), priority=80,
    phase="load_weights",
    sources=(("sglang 0.5.8", "sglang/srt/layers/moe/fused_moe_triton/layer.py:501"),
             ("sglang 0.5.8", "sglang/srt/layers/moe/fused_moe_triton/layer.py:428"),
             ("0.4.10.post2", "sglang/srt/layers/linear.py:1254"),
             ("torch", "aten/src/ATen/native/TensorShape.cpp (narrow's TORCH_CHECK: start (S) + length (L) "
                       "exceeds dimension size (N).)")))

# (round 33) a LoRA adapter the manager could not load: it catches the loader's exception and raises
# "Failed to load LoRA adapter NAME: " + str(e) (0.5.23 lora/lora_manager.py:761, 0.5.13 :489,
# 0.4.10.post2 :378), so a KeyError's quoted tensor name follows the colon; SGLang stacks an adapter's
# q/k/v into qkv_proj and looks v_proj up wherever q_proj is adapted (0.5.23 lora/lora.py:282-296)
_LORA_KEY = r"Failed to load LoRA adapter \S+: '(?:[\w-]+\.)+(?:weight|bias)'"
LORA_ADAPTER_KEY = Signature(
    "lora_adapter_tensor_missing", "weights_unreadable", "a LoRA adapter lacks a tensor the loader looks up",
    ("The LoRA adapter's weights could not be placed: the loader looked up the tensor named after the "
     "colon and the adapter has none. SGLang stacks an adapter's q/k/v (and gate/up) projections and "
     "expects v_proj wherever q_proj is adapted: train or convert the adapter with the target modules "
     "this release expects (q_proj with v_proj), or check the adapter's adapter_config.json "
     "`target_modules` against its safetensors' names.",),
    types=r"RuntimeError", patterns=(_LORA_KEY,), lines=(_LORA_KEY,), priority=80, phase="load_weights",
    sources=(("0.5.23", "sglang/srt/lora/lora_manager.py:761"),
             ("0.5.13", "sglang/srt/lora/lora_manager.py:489"),
             ("0.4.10.post2", "sglang/srt/lora/lora_manager.py:378"),
             ("0.5.23", "sglang/srt/lora/lora.py:286")))

# (vLLM round 81) a folder's (or a hub snapshot's) config.json that is not JSON: transformers reads the resolved
# ".../config.json" as text (4.56.1 configuration_utils.py:756 -> _dict_from_json_file :866) and re-raises the
# JSONDecodeError of an empty or cut file as "It looks like the config file at '{file}' is not a valid JSON file."
# (:759-760). The model was found (its config resolved to a file in its folder); the checkpoint's file is broken. A
# path that names another file (a .pth) is models.py's model_path_is_a_file (its path does not end in .json)
_CONFIG_NOT_JSON = r"It looks like the config file at '[^']*\.json' is not a valid JSON file\."
CONFIG_NOT_JSON = Signature(
    "checkpoint_config_not_json", "weights_unreadable", "the checkpoint's config.json is not valid JSON",
    ("The model's config.json was found but is not JSON (an empty or cut download, a Git LFS pointer, a "
     "hand edit): open it, and download the checkpoint again (delete its snapshot in the Hugging Face "
     "cache, `huggingface-cli download MODEL`), or fix the file.",),
    types=r"OSError|EnvironmentError", patterns=(_CONFIG_NOT_JSON,), lines=(_CONFIG_NOT_JSON,),
    priority=85, phase="launch",
    sources=(("transformers 4.56.1", "transformers/configuration_utils.py:756"),
             ("transformers 4.56.1", "transformers/configuration_utils.py:760"),
             ("transformers 4.56.1", "transformers/configuration_utils.py:866")))

# (round 97) SGLang 0.1.x builds its linear layers from vLLM's, whose sharded weight_loaders check the checkpoint's
# tensor with a bare "assert param_data.shape == loaded_weight.shape" (vllm 0.2.7 model_executor/layers/
# linear.py:204, :312, :437 QKVParallelLinear, :528; sglang 0.1.11 models/llama2.py:310 calls it; vLLM's own family:
# vllm_loader_shape): an AssertionError raised by that line of vLLM's weight_loader, the last frame, is a checkpoint
# tensor whose shape is not its parameter's
_VLLM_SHAPE_ASSERT = (r'[/\\]vllm[/\\]model_executor[/\\]layers[/\\]\w+\.py", line \d+,? in weight_loader\s*\n'
                      r"[ \t]*assert param_data\.shape == loaded_weight\.shape\s*\n" + NO_LATER_FRAME)
VLLM_LAYER_SHAPE = Signature(
    "vllm_layer_shape", "weights_unreadable", "a checkpoint tensor does not fit the vLLM layer SGLang built",
    (_ADVICE,), types=r"AssertionError", patterns=(r".",), context=(_VLLM_SHAPE_ASSERT,), priority=80,
    phase="load_weights", sources=(("vllm 0.2.7", "vllm/model_executor/layers/linear.py:437 (assert param_data.shape "
                                                  "== loaded_weight.shape), :204, :312, :528"),
                                   ("sglang 0.1.11", "sglang/srt/models/llama2.py:310 (weight_loader(param, "
                                                     "loaded_weight, shard_id))")))

# (round 122) the same refusal in a quantization method's post-load step: process_weights_after_loading combines the
# checkpoint's scales into the kernels' own once the weights are read (0.5.23 model_loader/loader.py:1089). ModelOpt's
# NVFP4 MoE keeps the input scales for all the model's experts, (num_experts, shards) (0.5.23
# layers/quantization/modelopt_quant.py:2634-2639, _sglang_require_global_experts), the weight scales for the rank's
# own, num_local_experts (:2592-2601); the backends that slice the first to the rank's experts do so
# (_input_scale_to_local_experts :2311-2333, _slice_scale :2792-2803), the default branch takes its max over the
# shards only (:2809) and multiplies it by the weight scale (_compute_gemm1_alphas :2825, :2357), so with expert
# parallelism torch's broadcast check refuses num_experts against num_local_experts. A size mismatch under a
# quantization method's process_weights_after_loading is the checkpoint's tensors not fitting the layer as this
# launch laid it out; the same text in a forward (serving, capture) is not this
_POSTLOAD = r'[/\\]layers[/\\]quantization[/\\][\w/\\]*\.py", line \d+,? in process_weights_after_loading\s*$'
POSTLOAD_SHAPE = Signature(
    "postload_scale_shape", "weights_unreadable",
    "a quantization method's post-load step found the checkpoint's tensors of sizes that do not fit together",
    ("A quantization method's post-load step (process_weights_after_loading, which folds the checkpoint's scales "
     "into the kernels' own) multiplied two of the layer's tensors whose sizes do not broadcast: the checkpoint's "
     "tensors do not fit the layer as this launch lays it out. With expert parallelism (`--ep-size`), one size "
     "the other's times the EP size is a scale kept for all the experts beside one for this rank's: launch without "
     "expert parallelism, try another `--moe-runner-backend`, or an SGLang release whose method slices the scale to "
     "the rank's experts; otherwise check that `--quantization` matches the checkpoint.",),
    patterns=(_SIZES,), context=(_POSTLOAD,), priority=79, phase="load_weights",
    sources=(("0.5.23", "sglang/srt/model_loader/loader.py:1089"),
             ("0.5.23", "sglang/srt/layers/quantization/modelopt_quant.py:2634"),
             ("0.5.23", "sglang/srt/layers/quantization/modelopt_quant.py:2592"),
             ("0.5.23", "sglang/srt/layers/quantization/modelopt_quant.py:2809"),
             ("0.5.23", "sglang/srt/layers/quantization/modelopt_quant.py:2825"),
             ("0.5.23", "sglang/srt/layers/quantization/modelopt_quant.py:2357"),
             ("0.5.23", "sglang/srt/layers/quantization/modelopt_quant.py:2311"),
             ("0.5.23", "sglang/srt/layers/quantization/modelopt_quant.py:2792"),
             ("torch 2.6.0", "aten/src/ATen/ExpandUtils.cpp:33 (infer_size_impl: The size of tensor a "
                             "({}) must match the size of tensor b ({}) at non-singleton dimension {})")))

SIGNATURES = [WEIGHT_NAME, WEIGHT_NAME_ALONE, UNREADABLE, LOADER_COPY_SHAPE,
              LORA_ADAPTER_KEY,  # (round 33)
              LOADER_NARROW,  # (round 78)
              POSTLOAD_SHAPE,  # (round 122)
              CONFIG_NOT_JSON,  # (vLLM round 81)
              VLLM_LAYER_SHAPE]  # (round 97)
