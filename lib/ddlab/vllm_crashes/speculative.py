"""vLLM: speculative decoding's crash texts: its config refused, its budget, the draft against the target.

``--speculative-config`` is only ``json.loads`` at parse time; ``SpeculativeConfig``
checks it when the engine config is built (pydantic validators), and so do the
scheduler's token budget and the graph sizes spec decode needs. Sources as in
:mod:`.vllm`: ``(release, "vllm/path.py:line")`` in the wheels.
"""

from __future__ import annotations

from ddlab.vllm_crashes.library import NO_REPO, V0
from ddlab.vllm_crashes.loading import SIZES
from ddlab.crashes.signature import NO_LATER_FRAME, Found, Signature, regex

__all__ = ["SIGNATURES"]

_V0 = V0


def _budget_detail(found: Found) -> str | None:
    tokens = found.facts.get("num_speculative_tokens")
    if isinstance(tokens, int) and tokens > 1:
        return (f"Fewer draft tokens need fewer slots: `num_speculative_tokens` {tokens} -> "
                f"{max(tokens // 2, 1)} in `--speculative-config`.")
    return None


def _sp_detail(found: Found) -> str | None:
    said = regex(r"multiple of (\d+) \(num_speculative_tokens \+ 1\).{0,80}?and (\d+) "
                 r"\(tensor_parallel_size\)").search(found.text)
    if not said:
        return None
    now, tp = int(said[1]) - 1, int(said[2])
    fits = [k for k in range(1, max(now, tp) + 1) if tp % (k + 1) == 0 or (k + 1) % tp == 0]
    below = [k for k in fits if k <= now]
    pick = max(below) if below else min(fits)
    return (f"With tensor_parallel_size {tp}, `num_speculative_tokens` {pick} fits (now {now}): set it in "
            "`--speculative-config`.")


# spec decode's graph shapes (multiples of num_speculative_tokens + 1) against sequence
# parallelism's (multiples of the TP size): config/compilation.py:1558 (0.30.0)
SPEC_SP_SHAPES = Signature(
    "vllm_spec_sp_shapes", "bad_argument", "speculative decoding's graph sizes and sequence parallelism disagree",
    ("With sequence parallelism every CUDA graph size must be a multiple of the TP size, and with "
     "speculative decoding a multiple of `num_speculative_tokens` + 1: pick `num_speculative_tokens` in "
     "`--speculative-config` so that one divides the other, or turn sequence parallelism off "
     "(the compilation config's pass_config enable_sp).",),
    patterns=(r"Can't determine cudagraph shapes that are both a multiple of",),
    lines=(r"Can't determine cudagraph shapes that are both a multiple of",),
    priority=89, phase="launch", detail=_sp_detail,
    sources=(("0.30.0", "vllm/config/compilation.py:1558"),
             ("0.30.0", "vllm/v1/executor/multiproc_executor.py:438")))


def _draft_detail(found: Found) -> str | None:
    if not regex(r"num_speculative_tokens was provided without speculative_model").search(found.text):
        return None
    return ("Draft tokens need a drafter: give `--speculative-config` a \"model\" (a draft model) or a "
            "\"method\" (ngram, or the model's own MTP heads) beside \"num_speculative_tokens\" "
            "(vLLM 0.6's speculative_model argument).")


SPEC_CONFIG = Signature(
    "vllm_speculative_config", "bad_argument", "--speculative-config was rejected",
    ("vLLM refused the `--speculative-config` JSON when it built the engine config: fix the key "
     "or value the message names (the parser takes any JSON; SpeculativeConfig checks it later).",),
    patterns=(r"validation errors? for SpeculativeConfig",
              r"'tensor_parallel_size' is not a valid argument in the speculative_config",
              r"num_speculative_tokens must be provided with",
              r"Expected num_speculative_tokens to be greater", r"Unknown speculative method",
              r"is not supported with speculative method",
              r"cannot be other value than 1 or target model tensor_parallel_size",
              r"speculative_max_model_len=\d+ cannot be larger than",
              r"num_speculative_tokens was provided without speculative_model",
              # V0's speculative worker refusing a combination when it is created
              r"EAGLE does not support TP > 1 yet"),
    lines=(r"validation errors? for SpeculativeConfig", r"Unknown speculative method '",
           r"'tensor_parallel_size' is not a valid argument in the speculative_config",
           r"num_speculative_tokens was provided without speculative_model"),
    # (round 91) the draft's model not found (get_config's refusal inside SpeculativeConfig) is MODEL_NOT_FOUND's
    absent=(NO_REPO,),
    priority=89, phase="launch", detail=_draft_detail,
    sources=((_V0, "vllm/config.py:1428"), (_V0, "vllm/config.py:1516"), (_V0, "vllm/config.py:1616"),
             ("0.30.0", "vllm/config/speculative.py:1780"), ("0.30.0", "vllm/config/speculative.py:1793"),
             ("0.33.0", "vllm/config/speculative.py:1942"), ("0.33.0", "vllm/config/speculative.py:1868"),
             ("0.34.0", "vllm/config/speculative.py:1630"), ("0.34.0", "vllm/config/speculative.py:1649"),
             ("0.34.0", "vllm/config/speculative.py:1655"), ("0.34.0", "vllm/config/speculative.py:1662"),
             ("0.34.0", "vllm/config/speculative.py:1400"), ("0.34.0", "vllm/config/speculative.py:1549"),
             (_V0, "vllm/config.py:1315"), (_V0, "vllm/spec_decode/spec_decode_worker.py:166")))

# the V1 model runner builds a drafter per method; a method the config took but the runner has no
# drafter for is refused when the runner is built (round 6: mlp_speculator)
SPEC_METHOD_UNROUTED = Signature(
    "vllm_spec_method_unrouted", "bad_argument", "this release's model runner has no drafter for the method",
    ("The speculative config took the method, but this release's V1 model runner builds no drafter for "
     "it: pick a method the release runs (eagle, eagle3, ngram, mtp, draft_model ...) as \"method\" in "
     "`--speculative-config`, or a release that runs this one.",),
    patterns=(r"Unknown speculative decoding method: ",), lines=(r"Unknown speculative decoding method: ",),
    priority=89, phase="launch", fatal=True,
    sources=(("0.30.0", "vllm/v1/worker/gpu_model_runner.py:698"),
             ("0.33.0", "vllm/v1/worker/gpu_model_runner.py:663")))

# vLLM 0.7's V1 engine ran no speculative decoding at all; its platform check refused any
# speculative config when VLLM_USE_V1 was set (round 6, quoted in a thread)
SPEC_V1_UNSUPPORTED = Signature(
    "vllm_spec_v1_unsupported", "bad_argument", "this release's V1 engine runs no speculative decoding",
    ("This vLLM release's V1 engine runs no speculative decoding: relaunch with VLLM_USE_V1=0 (its V0 "
     "engine runs it), use vLLM 0.8 or later (V1 with ngram and EAGLE drafts), or drop "
     "`--speculative-config`.",),
    patterns=(r"Speculative decoding is not yet supported on VLLM V1",),
    lines=(r"Speculative decoding is not yet supported on VLLM V1",),
    priority=89, phase="launch", fatal=True,
    sources=(("0.7.3", "vllm/platforms/rocm.py:184"),))

# (round 97) 0.7.0's CUDA platform refused V1's two missing features with a bare NotImplementedError in
# check_and_update_config: multi-step scheduling (--num-scheduler-steps) and a speculative config
# (0.7.0 vllm/platforms/cuda.py:121-123, :127-129); no other raise in that method, nothing after it
_CUDA_V1_BARE = (r'vllm[/\\]platforms[/\\]cuda\.py", line \d+, in check_and_update_config[ \t]*\n'
                 r"[ \t]*raise NotImplementedError[ \t]*\n" + NO_LATER_FRAME)
CUDA_V1_REFUSED = Signature(
    "vllm_cuda_v1_refused", "bad_argument", "this release's V1 engine refused multi-step or speculative decoding",
    ("vLLM 0.7's V1 engine (VLLM_USE_V1=1) runs neither multi-step scheduling nor speculative decoding, and its "
     "CUDA platform refuses them with a bare NotImplementedError: start without multi-step scheduling (V1 needs none) "
     "and without a speculative model, or relaunch with VLLM_USE_V1=0.",),
    types=r"(?:\w+\.)*NotImplementedError", patterns=(r"^",), context=(_CUDA_V1_BARE,),
    priority=89, phase="launch", fatal=True,
    sources=(("vllm 0.7.0", "vllm/platforms/cuda.py:123"), ("vllm 0.7.0", "vllm/platforms/cuda.py:129")))

# the scheduler's token budget less the draft slots of every request is <= 0
SPEC_BUDGET = Signature(
    "vllm_spec_token_budget", "bad_argument", "the draft tokens take the whole scheduling budget",
    ("Each request reserves `num_speculative_tokens` draft slots in the step's token budget: raise "
     "`--max-num-batched-tokens`, or lower `num_speculative_tokens` in `--speculative-config` or "
     "`--max-num-seqs`.",),
    patterns=(r"max_num_scheduled_tokens is set to -?\d+.{0,80}?does not allow any tokens to be scheduled",),
    lines=(r"max_num_scheduled_tokens is set to -?\d+.{0,80}?does not allow any tokens to be scheduled",),
    priority=88, phase="launch", detail=_budget_detail,
    sources=(("0.30.0", "vllm/config/vllm.py:2127"), ("0.33.0", "vllm/config/vllm.py:2352"),
             ("0.34.0", "vllm/config/vllm.py:2274")))

# --- speculative decoding: draft vs target --------------------------------------------

# vLLM puts Eagle / Eagle3 before the draft's own architecture unless it starts so
# (transformers_utils/configs/eagle.py:51, :62 (0.34.0)): an architecture marked twice is an
# EAGLE-3 checkpoint given to method eagle (or the reverse), a method / checkpoint mismatch; one
# marked once that vLLM lacks is an architecture it does not support (arch_unsupported)
_DRAFT_ARCH = r"'(?:Eagle3?\w*Eagle3?\w*|Eagle3?\w*ForCausalLMEagle\w*)'"
_DRAFT_ADVICE = ("The draft checkpoint does not match the speculative method or the target: an "
                 "EAGLE-3 head needs `\"method\":\"eagle3\"` (vLLM prefixes Eagle / Eagle3 to the draft's "
                 "architecture), an EAGLE-1 head `\"method\":\"eagle\"`, and a draft must share the "
                 "target's tokenizer. Fix `method` or `model` in `--speculative-config`.")
# checked when the speculative config is built (a pydantic model validator): ranked above the
# config's generic refusal, which it is raised as
DRAFT_VOCAB = Signature(
    "vllm_draft_vocab", "draft_incompatible", "the draft model's vocabulary is not the target's",
    (_DRAFT_ADVICE,),
    patterns=(r"Target and draft model should have the same vocabulary size",),
    lines=(r"Target and draft model should have the same vocabulary size",),
    priority=91, phase="launch",
    sources=(("0.30.0", "vllm/config/speculative.py:1845"), ("0.33.0", "vllm/config/speculative.py:2050"),
             ("0.34.0", "vllm/config/speculative.py:1735")))

# the draft's architecture with the method's prefix is no model vLLM knows: raised when the
# draft model is resolved and loaded
DRAFT_ARCH = Signature(
    "vllm_draft_arch", "draft_incompatible", "the draft model's architecture does not fit the method",
    (_DRAFT_ADVICE,),
    patterns=(rf"Cannot find model module\. {_DRAFT_ARCH} is not a registered model",
              rf"Model architectures \[{_DRAFT_ARCH}\] are not supported"),
    lines=(rf"Cannot find model module\. {_DRAFT_ARCH} is not a registered model",),
    priority=87, phase="load_weights",
    sources=(("0.34.0", "vllm/transformers_utils/configs/eagle.py:51"),
             ("0.34.0", "vllm/transformers_utils/configs/eagle.py:62"),
             ("0.30.0", "vllm/model_executor/models/registry.py:1269"),
             ("0.34.0", "vllm/model_executor/models/registry.py:1397")))

# the V0 speculative worker with a tensor-parallel draft (spec_decode_worker.py:690 (0.6.4.post1))
SPEC_TP_DRAFT = Signature(
    "vllm_spec_tp_draft", "spec_feature_conflict", "speculative decoding with a tensor-parallel draft failed",
    ("The V0 speculative worker cannot handle a step where the tensor-parallel draft workers "
     "propose nothing: run the draft on one GPU (`\"draft_tensor_parallel_size\":1` in "
     "`--speculative-config`) or move to the V1 engine (a newer vLLM).",),
    patterns=(r"Cannot handle cases where distributed draft workers generate no tokens",),
    lines=(r"Cannot handle cases where distributed draft workers generate no tokens",),
    priority=80, phase="serving",
    sources=((_V0, "vllm/spec_decode/spec_decode_worker.py:690"),))

# the V0 speculative worker asserts that the draft's and the target's vocabulary sizes agree
# (a bare assert: the exception line is only "AssertionError"); its code line is the assert's own
# text, so a paste that kept only that line and the exception's still names it (round 5)
_VOCAB_ASSERT = r"^\s*assert all\(vocab_sizes\[0\] == vocab_size for vocab_size in vocab_sizes\)"
DRAFT_VOCAB_V0 = Signature(
    "vllm_draft_vocab_v0", "draft_incompatible", "the draft model's vocabulary is not the target's",
    DRAFT_VOCAB.advice,
    patterns=(r"",), types=r"AssertionError", context=(rf", in _vocab_size\s*$|{_VOCAB_ASSERT}",),
    lines=(_VOCAB_ASSERT,), priority=91,
    sources=((_V0, "vllm/spec_decode/spec_decode_worker.py:1067"),))

# --- speculative decoding against another feature -----------------------------------------

# the GDN (gated delta net) linear-attention backend of hybrid models builds a batch's metadata
# for plain decodes or speculative decodes, never both: asserted in its build()
GDN_SPEC_MIXED = Signature(
    "vllm_gdn_spec_mixed", "spec_feature_conflict",
    "a hybrid model's GDN attention got a batch mixing plain and speculative decodes",
    ("The GDN linear-attention backend (Qwen3-Next and other hybrid models) cannot take a batch that "
     "mixes plain decodes and speculative decodes: run this model without `--speculative-config`, or "
     "a release where the backend takes both; `--max-num-seqs 1` avoids mixed batches meanwhile.",),
    patterns=(r".",), types=r"(?:\w+\.)*AssertionError",
    context=(r"assert not \(num_decodes > 0 and num_spec_decodes > 0\)",), cut_ok=True,
    priority=83, running=True,
    sources=(("0.30.0", "vllm/v1/attention/backends/gdn_attn.py:420"),
             ("0.33.0", "vllm/v1/attention/backends/gdn_attn.py:606"),
             ("0.34.0", "vllm/v1/attention/backends/gdn_attn.py:622")))

# the scheduler passes each request's draft tokens through its grammar (structured outputs)
SPEC_GRAMMAR = Signature(
    "vllm_spec_grammar", "spec_feature_conflict", "a grammar failed on speculative draft tokens",
    ("The structured-output grammar failed while checking a request's draft tokens: speculative "
     "decoding with structured outputs (`response_format`, guided decoding) hit this release's grammar "
     "backend; serve grammar-constrained requests without `--speculative-config`, try another "
     "structured-output backend, or a newer vLLM.",),
    patterns=(r".",), context=(r", in update_draft_token_ids\w*\s*$", r"\bvalidate_tokens\("),
    cut_ok=True, priority=83, running=True, phase="serving",
    sources=(("0.34.0", "vllm/v1/core/sched/scheduler.py:3016"),
             ("0.34.0", "vllm/v1/structured_output/__init__.py:380"),
             ("0.30.0", "vllm/v1/core/sched/scheduler.py:2449"),
             ("0.30.0", "vllm/v1/structured_output/__init__.py:311")))

# --- the draft against the target ---------------------------------------------------------

# the EAGLE-style proposer copies the target's hidden states into its own buffer, sized by the
# draft's hidden size: another width is a draft made for another target. The copy is in
# set_inputs_first_pass, whose other copies (token ids, positions) are of sizes the proposer sets
# itself, so a size mismatch there is the hidden states' (the frame or the code line suffices: a
# paste may keep one of them)
DRAFT_HIDDEN = Signature(
    "vllm_draft_hidden_size", "draft_incompatible", "the drafter's hidden size is not the target's",
    ("The drafter takes the target's hidden states, and its width is not the target's: the draft "
     "(EAGLE / MTP head) was made for another target model. Use the draft trained for this target "
     "in `--speculative-config`.",),
    patterns=(SIZES,), priority=86,
    context=(r"hidden_states\[:num_tokens\] = target_hidden_states|, in set_inputs_first_pass\s*$",),
    sources=(("0.30.0", "vllm/v1/spec_decode/llm_base_proposer.py:855"),
             ("0.33.0", "vllm/v1/spec_decode/llm_base_proposer.py:851"),
             ("vllm-ascend", "vllm_ascend/spec_decode/eagle_proposer.py (set_inputs_first_pass, as its "
                             "log shows it)")))


# (round 28) ArcticInference's proposer checks the draft against the target when it loads it (ArcticProposer
# .load_model): each refusal is one ERROR line ending "Set ARCTIC_INFERENCE_SKIP_SPEC_MODEL_CHECK=1 to skip
# this assertion." and then a bare "assert False" (arctic_inference 0.0.8 vllm/spec_dec/arctic_proposer.py:77,
# :79, :85, :87), so the line alone is the start's end: the AssertionError under it has no message
_ARCTIC_CHECK = r"Set ARCTIC_INFERENCE_SKIP_SPEC_MODEL_CHECK=1 to skip this assertion"
ARCTIC_SPEC_CHECK = Signature(
    "vllm_arctic_spec_check", "draft_incompatible", "ArcticInference refused the draft for this target",
    ("ArcticInference's speculator was not trained for this target model (its config names other base "
     "models, or none): use the Arctic speculator made for this target, or, if it is known to fit, set "
     "ARCTIC_INFERENCE_SKIP_SPEC_MODEL_CHECK=1 to skip the check.",),
    patterns=(_ARCTIC_CHECK,), lines=(_ARCTIC_CHECK,), priority=86, phase="load_weights", fatal=True,
    sources=(("arctic_inference 0.0.8", "arctic_inference/vllm/spec_dec/arctic_proposer.py:77"),
             ("arctic_inference 0.0.8", "arctic_inference/vllm/spec_dec/arctic_proposer.py:85")))


# (round 32) an EAGLE head is vLLM's own small model per target family (llama_eagle3.py builds one Llama
# decoder layer; the registry maps Eagle3LlamaForCausalLM, LlamaForCausalLMEagle3, Eagle3Qwen3vl... onto it:
# registry.py:577-581 (0.20.0)); its load_weights looks each checkpoint name up among its own parameters,
# `param = params_dict[name]` (llama_eagle3.py:266, llama_eagle.py:152, deepseek_eagle3.py:293 (0.20.0);
# deepseek_eagle.py:153, minicpm_eagle.py:272 (0.30.0, 0.34.0)), after renaming EAGLE-3's `midlayer.` to
# `layers.0.` (llama_eagle3.py:238 (0.20.0); from 0.30.0 through AutoWeightsLoader, whose miss is
# vllm_no_such_param's text). A name it has no parameter for (a Qwen3-style q/k norm)
# is a draft trained with another layer than the one vLLM builds for the method: the draft does not fit, as
# SGLang's EAGLE-3 midlayer names. The innermost frame must be the head's (a file *_eagle.py / *_eagle3.py:
# eagle2_5_vl.py is NVIDIA's Eagle 2.5 vision-language model, no drafter); the target's own lookup stays
# weights_unreadable (vllm_params_lookup)
_EAGLE_LOOKUP = (r'vllm[/\\]model_executor[/\\]models[/\\]\w+_eagle3?\.py", line \d+, in load_weights\w*\s*\n'
                 r'[ \t]*param = params_dict\[\w+\]\s*\n' + NO_LATER_FRAME)
EAGLE_HEAD_PARAMS = Signature(
    "vllm_eagle_head_params", "draft_incompatible", "the EAGLE checkpoint holds a tensor vLLM's head has no place for",
    ("The draft checkpoint names a tensor (the KeyError's name) that the EAGLE head vLLM builds for this method "
     "does not have: the drafter was trained with another layer than vLLM's head (a Qwen3-style q/k norm in a "
     "Llama-style head, a mixture-of-experts layer). Use a drafter trained for vLLM's EAGLE head of this target "
     "(\"method\" and \"model\" in `--speculative-config`), or convert it to that head's layout.",),
    types=r"KeyError", patterns=(r"^KeyError: '(?:[\w-]+\.)+[\w-]+'",), context=(_EAGLE_LOOKUP,),
    priority=86, phase="load_weights",
    sources=(("0.34.0", "vllm/model_executor/models/deepseek_eagle.py:153"),
             ("0.30.0", "vllm/model_executor/models/minicpm_eagle.py:272"),
             ("vllm 0.20.0", "vllm/model_executor/models/llama_eagle3.py:266"),
             ("vllm 0.20.0", "vllm/model_executor/models/llama_eagle3.py:238"),
             ("vllm 0.20.0", "vllm/model_executor/models/llama_eagle.py:152"),
             ("vllm 0.20.0", "vllm/model_executor/models/registry.py:577")))

# (round 87) a draft model's own files (vLLM's drafters: EAGLE heads, Medusa, MLPSpeculator; eagle2_5_vl.py is
# no drafter). Under their load_weights, the default loader's shape assert (weight_utils.py:614 (0.9.1), reached
# from eagle.py:215's `weight_loader(self.fc.weight, loaded_weight)` (0.9.1)) refuses a draft tensor sized for
# another target or method (an EAGLE-3 checkpoint's fc over three hidden states loaded as EAGLE); under their
# forward (medusa.py:28 `x = x + self.act(layer(x))` (0.6.2)), a matmul of the target's hidden states with the
# draft's layer that cannot multiply is a draft built for another hidden size. The target's own refusals stay.
_DRAFT_FILE = r'vllm[/\\]model_executor[/\\]models[/\\](?:(?:\w+_)?eagle3?|medusa|mlp_speculator)\.py", line \d+, in '
_DRAFT_LOAD = (_DRAFT_FILE + r'load_weights\s*\n(?:(?![ \t]*File ").*\n)*[ \t]*File "[^"\n]*weight_utils\.py", '
               r'line \d+, in default_weight_loader\s*\n' + NO_LATER_FRAME)
_ONLY_TORCH_LATER = r'(?:(?![ \t]*File ").*(?:\n|\Z)|[ \t]*File "[^"\n]*[/\\]torch[/\\][^\n]*(?:\n|\Z))*\Z'
_DRAFT_FORWARD = _DRAFT_FILE + r'forward\s*\n' + _ONLY_TORCH_LATER
_DRAFT_ADVICE = ("The draft model (`model` in `--speculative-config`) does not fit the target or the method vLLM "
                 "builds it for: use a drafter trained for this target and method (an EAGLE-3 checkpoint as "
                 "`eagle3`, not `eagle`; a Medusa or MLPSpeculator head of the target's hidden size).",)
DRAFT_WEIGHT_SHAPE = Signature(
    "vllm_draft_weight_shape", "draft_incompatible", "a draft checkpoint's tensor does not fit the draft vLLM built",
    _DRAFT_ADVICE, types=r"AssertionError", patterns=(r"Attempted to load weight \(",), context=(_DRAFT_LOAD,),
    priority=86, phase="load_weights",
    sources=(("vllm 0.9.1", "vllm/model_executor/models/eagle.py:215"),
             ("vllm 0.9.1", "vllm/model_executor/model_loader/weight_utils.py:614")))
DRAFT_FORWARD_SHAPE = Signature(
    "vllm_draft_forward_shape", "draft_incompatible", "the draft model's layers do not fit the target's hidden states",
    _DRAFT_ADVICE, types=r"RuntimeError", patterns=(r"mat1 and mat2 shapes cannot be multiplied",),
    context=(_DRAFT_FORWARD,), priority=86, phase="serving",
    sources=(("vllm 0.6.2", "vllm/model_executor/models/medusa.py:28"),))

# (round 32) the V1 draft-model proposer refuses a draft TP other than the target's when the model runner
# builds it (DraftModelProposer.__init__ -> _raise_if_draft_tp_mismatch: all ranks compiling a TP-1 draft
# would share one compile cache): v1/spec_decode/draft_model.py:81 (0.15.1), :48 (0.20.0), :75 (0.27.1, 0.30.0;
# gone by 0.34.0)
_DRAFT_TP = r"Currently, 'draft_tensor_parallel_size' and 'tensor_parallel_size' must be the same"


def _draft_tp_detail(found: Found) -> str | None:
    said = regex(rf"{_DRAFT_TP}\. Got (\d+) and (\d+)").search(found.text)
    if not said:
        return None
    return (f"The draft runs at TP {said[1]}, the target at TP {said[2]}: set `\"draft_tensor_parallel_size\":"
            f"{said[2]}` in `--speculative-config`.")


DRAFT_TP_MISMATCH = Signature(
    "vllm_draft_tp_mismatch", "bad_argument", "the draft model's tensor-parallel size is not the target's",
    ("vLLM's draft-model proposer runs the draft at the target's tensor-parallel size only: set "
     "\"draft_tensor_parallel_size\" in `--speculative-config` to `--tensor-parallel-size` (or leave it out).",),
    patterns=(_DRAFT_TP,), lines=(_DRAFT_TP,), priority=90, phase="launch", detail=_draft_tp_detail,
    sources=(("0.30.0", "vllm/v1/spec_decode/draft_model.py:75"),
             ("vllm 0.15.1", "vllm/v1/spec_decode/draft_model.py:81"),
             ("vllm 0.20.0", "vllm/v1/spec_decode/draft_model.py:48"),
             ("vllm 0.27.1", "vllm/v1/spec_decode/draft_model.py:75")))


# (round 49) an EAGLE-3 head without a draft-to-target map returns its logits as they are, and asserts they are
# as wide as its config's vocabulary: "Expected logits to have shape (*, {self.config.vocab_size}), but got
# {logits.shape}" (model_executor/models/llama_eagle3.py:379-382, qwen3_eagle3.py:353-356, deepseek_eagle3.py:
# 340-343 (0.30.0); llama_eagle3.py:370-373 (0.34.0); first in 0.9.1, :216-218). vLLM builds no map only where
# the draft's draft_vocab_size equals the target's vocabulary (llama_eagle3.py:339-345 (0.30.0, 0.34.0)), so the
# assertion fails only for a head whose config's vocabulary is not the one its lm_head produces against this
# target: a draft made for another target. (In 0.9.1-0.28.0 the map is always built, llama_eagle3.py:195
# (0.9.1); the text was met in late-May-2025 builds where vLLM dropped every draft's d2t, PR #18909)
_EAGLE3_WIDTH = r"Expected logits to have shape \(\*, (\d+)\), but got torch\.Size\(\[\d+, (\d+)\]\)"


def _eagle3_width_detail(found: Found) -> str | None:
    said = regex(_EAGLE3_WIDTH).search(found.text)
    if not said:
        return None
    return (f"The drafter's logits are {said[2]} wide where its config's vocabulary is {said[1]} tokens: the "
            "draft's vocabulary is not this target's.")


EAGLE3_LOGITS_WIDTH = Signature(
    "vllm_eagle3_logits_width", "draft_incompatible", "the EAGLE-3 drafter's logits are not as wide as its vocabulary",
    ("The EAGLE-3 drafter has no draft-to-target token map (vLLM builds one only when the draft's "
     "draft_vocab_size differs from the target's vocabulary) and its logits are not as wide as the vocabulary "
     "its config names: the draft was made for another target model. Use the drafter trained for this target "
     "in `--speculative-config` (a reduced-vocabulary draft ships its d2t tensor). On a vLLM built from main "
     "in late May 2025 (between PRs #18488 and #18909) vLLM itself dropped every draft's d2t: update vLLM.",),
    types=r"AssertionError", patterns=(_EAGLE3_WIDTH,), priority=86, running=True, detail=_eagle3_width_detail,
    sources=(("0.30.0", "vllm/model_executor/models/llama_eagle3.py:379"),
             ("0.30.0", "vllm/model_executor/models/llama_eagle3.py:339"),
             ("0.34.0", "vllm/model_executor/models/llama_eagle3.py:370"),
             ("0.34.0", "vllm/model_executor/models/qwen3_eagle3.py:349"),
             ("vllm 0.9.1", "vllm/model_executor/models/llama_eagle3.py:216")))

SIGNATURES: list[Signature] = [SPEC_CONFIG, SPEC_METHOD_UNROUTED, SPEC_V1_UNSUPPORTED, CUDA_V1_REFUSED,
                               SPEC_BUDGET, SPEC_SP_SHAPES,
                               DRAFT_VOCAB, DRAFT_ARCH, SPEC_TP_DRAFT, GDN_SPEC_MIXED, SPEC_GRAMMAR,
                               DRAFT_HIDDEN, ARCTIC_SPEC_CHECK, EAGLE_HEAD_PARAMS, DRAFT_TP_MISMATCH,
                               EAGLE3_LOGITS_WIDTH, DRAFT_WEIGHT_SHAPE, DRAFT_FORWARD_SHAPE]
