"""Held-out round 15's misses (issue 24), each fixed by a general rule read from the source.

Round 15 (h15001-h15015) was measured once on main at 967803c (crashed 15/15, kind 12/15, phase 10/10)
and folded into ``work``; docs/diagnosis.md, "Held-out round 15", explains each miss. No label was
disputed: all three misses were ddlab's. Every test here reads the corpus log (now work split) or a
near miss written from the same source texts that must not read the same way; each rule's positive
tests fail on 967803c (the near misses hold on both). A text cited from an SGLang wheel is checked
there where the wheel is unpacked (skipped elsewhere).
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from fieldkit import REAL_MANIFEST, assert_in_sglang_wheel, assert_reads_as_labelled, real, reading as _said


# --- each round-15 miss reads as labelled -----------------------------------------------------------

@pytest.mark.parametrize(("log_id", "signature"), [
    ("h15006", "gguf_arch_unsupported"),       # transformers' GGUF loader refusing the architecture
    ("h15008", "deep_gemm_arch_unsupported"),  # DeepGEMM's arch-keyed table with no entry for sm120
    ("h15011", "kv_tokens_exhausted_cut"),     # cut inside the frame under EAGLE verify's alloc_token_slots
])
def test_round15_misses_read_as_labelled(log_id, signature):
    assert_reads_as_labelled(log_id, signature)


def test_no_round15_label_is_disputed():
    folded = [log for log in REAL_MANIFEST.values() if log.get("heldout_round") == 15]
    assert len(folded) == 15 and not any(log.get("kind_disputed") or log.get("phase_disputed") for log in folded)


# --- h15006: transformers' GGUF loader maps only the GGUF architectures it lists ----------------------

_GGUF_FRAMES = ('Traceback (most recent call last):\n'
                '  File "/env/lib/python3.11/site-packages/transformers/configuration_utils.py", line 681, in '
                '_get_config_dict\n'
                '    config_dict = load_gguf_checkpoint(resolved_config_file, return_tensors=False)["config"]\n'
                '  File "/env/lib/python3.11/site-packages/transformers/modeling_gguf_pytorch_utils.py", line 401, '
                'in load_gguf_checkpoint\n'
                '    raise ValueError(f"GGUF model with architecture {architecture} is not supported yet.")\n')


def test_a_gguf_architecture_transformers_does_not_map_is_arch_unsupported():
    found = diagnose(_GGUF_FRAMES + "ValueError: GGUF model with architecture glm4moe is not supported yet.\n")
    assert (found.crashed, found.kind, found.phase, found.signature) == (True, "arch_unsupported", "launch",
                                                                         "gguf_arch_unsupported")
    assert "transformers" in found.suggestion
    # the line alone, as a launcher or a user's paste repeats it
    alone = diagnose("[2025-05-14 10:00:00] ValueError: GGUF model with architecture qwen3 is not supported yet.\n")
    assert (alone.kind, alone.signature) == ("arch_unsupported", "gguf_arch_unsupported")


def test_gguf_loaders_other_errors_are_not_an_unknown_architecture():
    # the same module's other refusal: gguf (or torch) not installed (transformers 4.51.3
    # modeling_gguf_pytorch_utils.py:360): a missing package, not the model's architecture
    missing = diagnose(_GGUF_FRAMES.replace("line 401", "line 360").replace(
        'raise ValueError(f"GGUF model with architecture {architecture} is not supported yet.")',
        'raise ImportError("Please install torch and gguf>=0.10.0 to load a GGUF checkpoint in PyTorch.")')
        + "ImportError: Please install torch and gguf>=0.10.0 to load a GGUF checkpoint in PyTorch.\n")
    assert missing.kind != "arch_unsupported"
    # the words in a user's question, not the loader's error
    assert diagnose("Is GGUF model with architecture qwen3 supported?\n").signature != "gguf_arch_unsupported"


# conda run reports the command it ran failed on a record of its own logger's format, "ERROR
# conda.cli.main_run:execute(N): `conda run <command>` failed. (See above for error)" (conda/conda
# conda/common/io.py _FORMATTER, conda/cli/main_run.py execute): a new record, not the exception's
# message going on (at 967803c it was, and the command's flags read as a rejected option)
_CONDA_RUN = ("ERROR conda.cli.main_run:execute(125): `conda run python -m sglang.launch_server --model-path /m "
              "--tp-size 2` failed. (See above for error)\n")


def test_conda_runs_error_line_is_a_record_of_its_own_not_the_exceptions_message():
    found = diagnose('Traceback (most recent call last):\n'
                     '  File "/env/lib/python3.11/site-packages/sglang/srt/model_loader/loader.py", line 400, in '
                     'load_model\n'
                     '    model = _initialize_model(model_config, self.load_config)\n'
                     "ValueError: the checkpoint has no lm_head\n" + _CONDA_RUN)
    assert found.signature != "flag_value_error" and found.kind != "bad_argument"
    assert found.cause == "ValueError: the checkpoint has no lm_head"
    # a message that goes on under its exception line still does: the flag there is the message's
    going_on = diagnose("ValueError: the value given is not valid\n  for --speculative-algorithm: NEXTN\n")
    assert (going_on.kind, going_on.signature) == ("bad_argument", "flag_value_error")


# --- h15008: DeepGEMM's tables keyed by the GPU's arch ('90a', '100a'): no entry for this GPU ---------

_DG = "/venv/lib/python3.10/site-packages"
_DEEP_GEMM_FRAMES = (
    'Traceback (most recent call last):\n'
    f'  File "{_DG}/sglang/srt/layers/quantization/deep_gemm_wrapper/entrypoint.py", line 89, in gemm_nt_f8f8bf16\n'
    '    _gemm_nt_f8f8bf16_raw(\n'
    f'  File "{_DG}/deep_gemm/dispatch.py", line 55, in fp8_gemm_nt\n'
    '    if must_be_k_major():\n'
    f'  File "{_DG}/deep_gemm/dispatch.py", line 23, in must_be_k_major\n'
    '    return {\n')


@pytest.mark.parametrize("key", ["'120a'", "'89'", "('120a', torch.float32)"],
                         ids=["sm120", "sm89-no-suffix", "recipe-tuple"])
def test_deep_gemm_with_no_entry_for_the_gpus_arch_is_an_unsupported_gpu(key):
    found = diagnose(_DEEP_GEMM_FRAMES + f"KeyError: {key}\n")
    assert (found.crashed, found.kind, found.signature) == (True, "unsupported_gpu", "deep_gemm_arch_unsupported")
    assert "JIT_DEEPGEMM=0" in found.suggestion


def test_other_key_errors_are_not_deep_gemms_arch_table():
    # an arch-like key from a table outside DeepGEMM's frames
    outside = diagnose('Traceback (most recent call last):\n'
                       '  File "/app/serve.py", line 12, in <module>\n'
                       '    table[arch]\n'
                       "KeyError: '120a'\n")
    assert outside.signature != "deep_gemm_arch_unsupported" and outside.kind != "unsupported_gpu"
    # a key in DeepGEMM's frames that is not an architecture (its compiled dims, a config name)
    other = diagnose(_DEEP_GEMM_FRAMES + "KeyError: 'nk'\n")
    assert other.signature != "deep_gemm_arch_unsupported" and other.kind != "unsupported_gpu"


def test_sglang_calls_deep_gemm_on_every_sm90_or_newer_gpu():
    # unpacked from sglang 0.4.10.post2's wheel where /work/wheels has it (skipped elsewhere)
    configurer = "sglang/srt/layers/quantization/deep_gemm_wrapper/configurer.py"
    assert_in_sglang_wheel("0.4.10.post2", configurer, "    if sm_version < 90:\n        return False\n")
    assert_in_sglang_wheel("0.4.10.post2", "sglang/srt/layers/quantization/deep_gemm_wrapper/entrypoint.py",
                           "        _gemm_nt_f8f8bf16_raw(")


# --- h15011: a traceback cut in the path of the frame under a token-slot allocation -------------------

_SCHED = "/sgl/python/sglang/srt"
_VERIFY = ('[2025-12-12 10:00:00] Scheduler hit an exception: Traceback (most recent call last):\n'
           f'  File "{_SCHED}/managers/scheduler.py", line 2050, in run_batch\n'
           '    batch_result = self.model_worker.forward_batch_generation(\n'
           f'  File "{_SCHED}/speculative/eagle_worker.py", line 672, in verify\n'
           '    spec_info.prepare_for_verify(batch, self.page_size)\n'
           f'  File "{_SCHED}/speculative/eagle_info.py", line 111, in prepare_for_verify\n'
           '    batch.out_cache_loc = alloc_token_slots(\n'
           '                          ^^^^^^^^^^^^^^^^^^\n')


@pytest.mark.parametrize("call", ["batch.out_cache_loc = alloc_token_slots(",
                                  "batch.out_cache_loc = batch.alloc_token_slots(len(batch.input_ids))",
                                  "out_cache_loc = alloc_paged_token_slots_extend("],
                         ids=["0.5.x-function", "0.4.x-method", "paged-extend"])
def test_a_traceback_cut_right_under_a_token_slot_allocation_is_slots_exhausted(call):
    text = _VERIFY.replace("batch.out_cache_loc = alloc_token_slots(", call) + '  File "/sgl/pyth'
    found = diagnose(text)
    assert (found.crashed, found.kind, found.phase, found.signature) == (True, "slots_exhausted", "serving",
                                                                         "kv_tokens_exhausted_cut")


def test_a_cut_under_another_call_or_another_line_of_the_allocator_is_not_read_so():
    # the next frame shows the allocator's eviction, not its raise: what failed there is not known
    evicting = diagnose(_VERIFY + f'  File "{_SCHED}/mem_cache/common.py", line 205, in alloc_token_slots\n'
                                  '    evict_from_tree_cache(tree_cache, num_tokens)\n')
    assert evicting.signature != "kv_tokens_exhausted_cut" and evicting.kind != "slots_exhausted"
    # the paste ends on the call itself, no frame under it
    assert diagnose(_VERIFY).signature != "kv_tokens_exhausted_cut"
    # a frame cut under another call
    other = diagnose(_VERIFY.replace("alloc_token_slots(", "build_tree_kernel(").replace("^" * 18, "^" * 17)
                     + '  File "/sgl/pyth')
    assert other.signature != "kv_tokens_exhausted_cut" and other.kind != "slots_exhausted"


def test_h15011_reads_as_the_allocators_out_of_memory_with_its_advice():
    found = real("h15011")
    assert _said(found) == (True, "slots_exhausted", "serving")
    assert "--speculative-num-draft-tokens" in found.suggestion  # EAGLE's verify reserves its draft tokens' slots
