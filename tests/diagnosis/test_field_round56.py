"""Held-out round 56 (issue 24): a model path that names a file, and a quantization config choosing a layer's method.

Round 56 (h56001-h56010; excerpts of issue threads and pull requests) was measured once on main at 4cd3069 (with
the round's logs, 9718f32: crashed 10/10, kind 7/10, phase 5/6); docs/diagnosis.md, "Held-out round 56", explains
its four misses. h56004 is launch_server given a PyTorch .pth file as --model-path: transformers takes a path that
is a file as the config itself (4.56.1 configuration_utils.py:709-711) and reads it as JSON text (:756 ->
_dict_from_json_file :864-866), where a weights file fails to decode, re-raised as "It looks like the config file at
'{file}' is not a valid JSON file." (:759-760): model_not_found, by model_path_is_a_file. A folder's config.json that
is not JSON is not that. h56006 is compressed-tensors' scheme lookup under get_quant_method, whose only callers are
the layers' constructors (0.5.1 layers/linear.py:160 ...): the model being built, load_weights. h56007's kind is
disputed (Dynamo's tracing, before the piecewise runner's capture, 0.5.5 piecewise_cuda_graph_runner.py:191-209);
h56002 is left (the file json.load read is cut from the log). A rule's test reads the corpus log, a text written
from the same source in another form and near misses; the positive tests fail on 9718f32. A line cited from a wheel
is checked there (skipped where it is not unpacked).
"""

from __future__ import annotations

from ddlab.crashes.frames import frame_phases
from fieldkit import REAL_MANIFEST, assert_at_line, disputed, folded_round, real, reading, reads, said

_TF = "transformers/configuration_utils.py"
_CT = "sglang/srt/layers/quantization/compressed_tensors/compressed_tensors.py"
_SITE = "/usr/local/lib/python3.10/dist-packages"


def test_round56_is_folded_into_work_with_h56007s_kind_disputed():
    ids = folded_round(REAL_MANIFEST, 56)
    assert ids == [f"h560{i:02d}" for i in range(1, 11)]
    assert disputed(REAL_MANIFEST, ids) == ["h56007"]
    assert REAL_MANIFEST["h56007"]["kind_disputed"] == ["cuda_graph_capture", "unknown"]


# --- h56004: a model path that names a weights file ---------------------------------------------------------------

def _config_read(exc: str, inner: str = "", py312: bool = False) -> str:
    carets = "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n" if py312 else ""
    return ("Traceback (most recent call last):\n"
            f'  File "{_SITE}/{_TF}", line 756, in _get_config_dict\n'
            "    config_dict = cls._dict_from_json_file(resolved_config_file)\n" + carets +
            f'  File "{_SITE}/{_TF}", line 866, in _dict_from_json_file\n'
            "    text = reader.read()\n" + inner + exc)


def test_a_weights_file_given_as_the_model_path_is_no_model_folder():
    found = real("h56004")
    assert reading(found) == (True, "model_not_found", "launch")
    assert found.signature == "model_path_is_a_file"
    assert "`--model-path` names a file" in found.suggestion


def test_the_same_decode_failure_and_its_re_raise_read_the_same():
    # Python 3.12's carets, another binary file's first bytes
    text = _config_read("UnicodeDecodeError: 'utf-8' codec can't decode byte 0x8b in position 1: invalid start byte\n",
                        py312=True)
    assert said(text)[1:] == ("model_not_found", "model_path_is_a_file")
    # the chained OSError from_pretrained raises (4.56.1 :759-760), the file's name kept
    text = ("During handling of the above exception, another exception occurred:\n\n"
            "Traceback (most recent call last):\n"
            f'  File "{_SITE}/{_TF}", line 760, in _get_config_dict\n'
            "    raise OSError(f\"It looks like the config file at '{resolved_config_file}' is not a valid JSON file.\")\n"
            "OSError: It looks like the config file at './out/full_sft_768.pth' is not a valid JSON file.\n")
    assert said(text)[1:] == ("model_not_found", "model_path_is_a_file")


def test_a_folders_config_that_is_not_json_or_another_decode_error_is_not_this():
    for text in (
            # a folder's (or a repo's) config.json cut or empty: the checkpoint, not the path
            "OSError: It looks like the config file at '/models/Qwen2-7B/config.json' is not a valid JSON file.\n",
            _config_read("json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"),
            # a decode error outside the config read (a tokenizer's file)
            "Traceback (most recent call last):\n"
            f'  File "{_SITE}/transformers/tokenization_utils_base.py", line 2070, in _from_pretrained\n'
            "    special_tokens_map = json.load(special_tokens_map_handle)\n"
            "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x80 in position 64: invalid start byte\n"):
        assert reads(text)[1] != "model_not_found", text


def test_transformers_reads_a_path_that_is_a_file_as_the_config():
    assert_at_line("transformers", "4.56.1", _TF, 709,
                   "if os.path.isfile(os.path.join(subfolder, pretrained_model_name_or_path)):")
    assert_at_line("transformers", "4.56.1", _TF, 711, "resolved_config_file = pretrained_model_name_or_path")
    assert_at_line("transformers", "4.56.1", _TF, 756, "config_dict = cls._dict_from_json_file(resolved_config_file)")
    assert_at_line("transformers", "4.56.1", _TF, 759, "except (json.JSONDecodeError, UnicodeDecodeError):")
    assert_at_line("transformers", "4.56.1", _TF, 760, "is not a valid JSON file.")
    assert_at_line("transformers", "4.56.1", _TF, 866, "text = reader.read()")
    assert_at_line("sglang", "0.5.1", "sglang/srt/hf_transformers_utils.py", 129, "config = AutoConfig.from_pretrained(")


# --- h56006: a quantization config choosing a layer's method ------------------------------------------------------

def test_a_scheme_lookup_under_get_quant_method_is_the_model_being_built():
    assert reading(real("h56006")) == (True, "unknown", "load_weights")


def test_another_releases_frames_read_the_same():
    # 0.5.1's own lines, its NotImplementedError for a scheme it has no class for (:436)
    text = ("Traceback (most recent call last):\n"
            f'  File "{_SITE}/{_CT}", line 131, in get_quant_method\n'
            "    scheme = self.get_scheme(layer=layer, layer_name=prefix)\n"
            f'  File "{_SITE}/{_CT}", line 522, in get_scheme\n'
            "    scheme = self._get_scheme_from_parts(  # type: ignore\n"
            f'  File "{_SITE}/{_CT}", line 436, in _get_scheme_from_parts\n'
            '    raise NotImplementedError("No compressed-tensors compatible scheme was found.")\n'
            "NotImplementedError: No compressed-tensors compatible scheme was found.\n")
    assert reads(text)[2] == "load_weights"
    # 0.5.23's fp8 config (layers/quantization/fp8.py:389, its MoE method at :423), Python 3.12's form
    text = ('  File "/sgl-workspace/sglang/python/sglang/srt/layers/quantization/fp8.py", line 423, in get_quant_method\n'
            "    fp8_method = Fp8MoEMethod(self)\n"
            "                 ^^^^^^^^^^^^^^^^^^\n")
    assert "load_weights" in frame_phases(text)


def test_a_quant_methods_forward_or_vllms_get_quant_method_is_not_this():
    # the method applied in a forward is serving's; vLLM's own config is not SGLang's layers being built
    for text in ('  File "/x/sglang/srt/layers/quantization/fp8.py", line 600, in apply\n',
                 '  File "/x/vllm/model_executor/layers/quantization/fp8.py", line 180, in get_quant_method\n'):
        assert "load_weights" not in frame_phases(text), text


def test_get_quant_methods_callers_are_the_layers_constructors():
    for release, path, line in (("0.5.1", "sglang/srt/layers/linear.py", 160),
                                ("0.5.1", "sglang/srt/layers/moe/fused_moe_triton/layer.py", 202),
                                ("0.5.1", "sglang/srt/layers/vocab_parallel_embedding.py", 260),
                                ("0.5.1", "sglang/srt/layers/radix_attention.py", 81),
                                ("0.5.23", "sglang/srt/layers/linear.py", 276),
                                ("0.5.23", "sglang/srt/layers/moe/fused_moe_triton/layer.py", 494),
                                ("0.5.23", "sglang/srt/layers/moe/fused_moe_triton/layer.py", 500),
                                ("0.5.23", "sglang/srt/layers/vocab_parallel_embedding.py", 304),
                                ("0.5.23", "sglang/srt/layers/radix_attention.py", 105)):
        assert_at_line("sglang", release, path, line, "quant_config.get_quant_method(self")
    assert_at_line("sglang", "0.5.1", "sglang/srt/layers/linear.py", 139, "def __init__(")
    assert_at_line("sglang", "0.5.1", _CT, 131, "scheme = self.get_scheme(layer=layer, layer_name=prefix)")
    assert_at_line("sglang", "0.5.1", _CT, 522, "scheme = self._get_scheme_from_parts(")


# --- h56007 (disputed) and h56002 (left) ------------------------------------------------------------------------------

def test_dynamos_refusal_under_the_piecewise_runner_reads_unknown_as_the_second_look_says():
    assert reading(real("h56007"))[:2] == (True, "unknown")


def test_the_piecewise_runner_traces_before_it_captures():
    runner = "sglang/srt/model_executor/piecewise_cuda_graph_runner.py"
    assert_at_line("sglang", "0.5.5", runner, 191, "install_torch_compiled(")
    assert_at_line("sglang", "0.5.5", runner, 193, "fullgraph=True,")
    assert_at_line("sglang", "0.5.5", runner, 200, "self.warmup_and_capture()")
    assert_at_line("sglang", "0.5.5", runner, 256, "_ = self.model_runner.model.forward(")
    assert_at_line("sglang", "0.5.5", runner, 205, "self.capture()")
    assert_at_line("sglang", "0.5.5", runner, 208, "Capture cuda graph failed")


def test_the_json_files_read_at_startup_are_not_only_the_checkpoints():
    # docs/diagnosis.md, h56002: 0.4.4.post3 reads the checkpoint's index and the custom all-reduce's P2P cache alike
    assert_at_line("sglang", "0.4.4.post3", "sglang/srt/model_loader/weight_utils.py", 319,
                   'weight_map = json.load(f)["weight_map"]')
    utils = "sglang/srt/distributed/device_communicators/custom_all_reduce_utils.py"
    assert_at_line("sglang", "0.4.4.post3", utils, 280, "cache = json.load(f)")
    allreduce = "sglang/srt/distributed/device_communicators/custom_all_reduce.py"
    assert_at_line("sglang", "0.4.4.post3", allreduce, 247, "_can_p2p(rank, world_size)")
    assert_at_line("sglang", "0.4.4.post3", allreduce, 134, "if not gpu_p2p_access_check(rank, i):")
    assert reading(real("h56002"))[:2] == (True, "unknown")
