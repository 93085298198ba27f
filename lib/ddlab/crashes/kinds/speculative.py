"""Speculative decoding combined with another feature, crashing while serving.

Speculative decoding (EAGLE, EAGLE3, NEXTN/MTP, STANDALONE, DFLASH, DDTREE,
NGRAM ...) rewrites what a batch carries (draft tokens, a verify batch several
tokens per request wide), and the other features that touch a batch each have
their own code for it: hybrid Mamba's state tracking, LoRA, grammar masks, DP
attention, PD disaggregation, decode context parallel, the hierarchical cache,
mixed chunks, pages wider than one token. The combination crashes most often in
the speculative path while serving, with an error that names neither.

:func:`conflict` decides it from what the log shows: the error was raised in the
speculative runtime path (a verify, draft or spec-decode-preparation frame, or
the path a condensed paste names), no startup frame is involved, and another
feature shows, in the frames (``mamba``, ``lora/``, ``disaggregation/``,
``dcp/`` ...) or in the server args. It replaces only what says less:
``unknown`` and a cut traceback; a graph-replay or eager-runner reading too when
the feature's own code is where the error was raised (the innermost frames),
not the graph's buffers. An OOM, a kernel fault or NCCL keep their kind.

The next step is the bisect that proves it: ``ddlab bisect`` from the config
with the other feature off (``--good``) to the one as deployed (``--bad``), with
the keys ddlab's overrides take (``flags.NAME=null`` removes a flag).

Also here (round 26): the speculative batch merge refusing two batches' hidden states of different
widths, a draft model whose hidden size is not the target's (``draft_incompatible``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ddlab.crashes.frames import STARTUP_FRAMES
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "SPEC_FEATURE", "Feature", "FEATURES", "FEATURE_FRAMES", "conflict", "combination", "SPEC_PATH"]

# where the speculative runtime path shows: files under speculative/, the workers' and
# their inputs' functions (frames, or a condensed paste's "a <- b <- c"); (round 21) the draft
# model's KV pool in HiCache's controller: registered only for a speculative draft worker with
# the hierarchical cache on (0.5.16 mem_cache/kv_cache_builder.py:73-127 maybe_register_hicache_draft,
# managers/cache_controller.py:848-852 set_draft_kv_pool), then copied with every backup and load
# (:725-726, mem_cache/hybrid_cache/hybrid_cache_controller.py:426-427, :512-516)
SPEC_PATH = (r"speculative[/\\]\w+"
             r"|\bmem_pool_(?:host|device)_draft\b"
             r"|\b\w*(?:eagle|dflash|ddtree|ngram|dspark|standalone|mtp)\w*_(?:worker|info|utils|verify)\w*"
             r"|\b(?:spec_prepare_for_decode|prepare_for_v2_verify|eagle_prepare_for_verify"
             r"|forward_batch_speculative_generation|_forward_prepared_verify|draft_forward"
             r"|forward_draft_extend\w*|draft_extend\w*)\b"
             r"|, in (?:verify|draft)\s*$")


@dataclass(frozen=True)
class Feature:
    """One feature that meets speculative decoding: how the frames and the server args show
    it, and the overrides that turn it off (``good``) and on as deployed (``bad``)."""

    name: str
    frames: str
    flag: str  # the SGLang flag that turns it on (kebab, without --)
    off: str
    on: str  # the deployed value when the server args do not say it
    arg: str = ""  # the server-args key (snake) that says it is on

    def seen(self, facts: dict, frames: str) -> str | None:
        """How the log shows it: 'frames', 'server args', or None."""
        if self.frames and regex(self.frames, re.I | re.M).search(frames):
            return "frames"
        value = facts.get(self.arg) if self.arg else None
        if isinstance(value, bool):
            on = value
        elif isinstance(value, (int, float)):
            on = value > 1  # a size: page size, DCP size
        else:
            on = bool(value) and str(value) not in ("null", "None", "no_buffer", "auto", "[]")
        return "server args" if on else None

    def bisect(self, facts: dict, host: str | None) -> str:
        deployed = facts.get(self.arg) if self.arg else None
        on = self.on if deployed in (None, True, "", "null") else deployed
        key = self.flag if self.flag.replace("-", "_") in _REGISTRY_KEYS else f"flags.{self.flag}"
        key = key.replace("-", "_") if not key.startswith("flags.") else key
        return (f"`ddlab bisect --host {host or 'HOST'} --good {key}={self.off} "
                f"--bad {key}={str(on).lower() if isinstance(on, bool) else on}`")


# flags ddlab's own registry knows take a snake key; any other goes through flags.NAME
_REGISTRY_KEYS = ("mamba_scheduler_strategy", "mamba_radix_cache_strategy")

FEATURES = (
    Feature("hybrid Mamba", r"mamba", "mamba-radix-cache-strategy", "no_buffer",
            "extra_buffer", "mamba_radix_cache_strategy"),
    # not MLA's low-rank query / KV compression (DeepSeek's q_lora, kv_lora: 0.5.23
    # models/deepseek_v2.py:2559 q_b_proj_forward(q_lora)), which every DeepSeek model runs
    Feature("LoRA", r"[/\\]lora[/\\]|\blora_\w+|\b(?!(?:q|kv)_lora\b)\w+_lora\b", "enable-lora", "null",
            "true", "enable_lora"),
    # not the grammar_barrier argument: the scheduler hands it to every spec v2 worker that could
    # overlap a grammar, whether or not any request uses one (0.5.23 managers/scheduler.py:4698,
    # speculative/spec_info.py:172; dspark_components/dspark_worker_v2.py:780 passes it on)
    Feature("grammar / structured output",
            r"grammar(?!_barrier\b)|xgrammar|llguidance|vocab_mask|[/\\]constrained[/\\]",
            "grammar-backend", "none", "xgrammar"),
    Feature("DP attention", r"dp_attention", "enable-dp-attention", "null", "true", "enable_dp_attention"),
    Feature("PD disaggregation", r"[/\\]disaggregation[/\\]|_disagg_\w+|\bdisagg_(?:decode|prefill)",
            "disaggregation-mode", "null", "decode", "disaggregation_mode"),
    Feature("decode context parallel", r"[/\\]dcp[/\\]|\bdcp_\w+|_for_dcp\b|decode_context_parallel",
            "dcp-size", "1", "2", "dcp_size"),
    Feature("hierarchical cache", r"hiradix|hicache|hi_mamba|cache_controller", "enable-hierarchical-cache",
            "null", "true", "enable_hierarchical_cache"),
    Feature("mixed chunk", r"mixed_chunk|mix_with_running|prepare_for_mixed", "enable-mixed-chunk", "null",
            "true", "enable_mixed_chunk"),
    Feature("page size > 1", "", "page-size", "1", "16", "page_size"),
    # (round 104) a sliding-window (hybrid SWA) model's verify on FlashInfer: the target-verify batch's metadata is
    # built with prefix_lens=None (0.5.12 layers/attention/flashinfer_backend.py:470) and the sliding-window updater
    # subtracts it (:1317, update_sliding_window): frames only (the window is the model's, no flag turns it off);
    # the bisect swaps the attention backend
    Feature("sliding-window attention on FlashInfer", r"\bupdate_sliding_window\b", "attention-backend", "triton",
            "flashinfer"),
    # (round 111) hidden states returned with NGRAM: its verify tests `if logits_output.hidden_states:` (0.5.10
    # speculative/ngram_info.py:202, 0.5.13 :206), a tensor only when a request asks for hidden states (0.5.13
    # model_executor/forward_batch_info.py:579-580; NGRAM's input sets no capture mode of its own), and torch refuses
    # the truth of a tensor of more than one value
    Feature("hidden states returned", r"^\s*if logits_output\.hidden_states:\s*$", "enable-return-hidden-states",
            "null", "true", "enable_return_hidden_states"),
)
FEATURE_FRAMES = "|".join(feature.frames for feature in FEATURES if feature.frames)
# the mamba flag changed name: before 0.5.14 (and until 0.5.18) it was the scheduler strategy
_OLD_MAMBA = Feature("hybrid Mamba", r"mamba", "mamba-scheduler-strategy", "no_buffer",
                     "extra_buffer", "mamba_scheduler_strategy")


def _features(facts: dict, frames: str) -> list[tuple[Feature, str]]:
    seen = []
    for feature in FEATURES:
        if feature.arg == "mamba_radix_cache_strategy" and (
                "mamba_scheduler_strategy" in facts or facts.get("sglang_version_hint") == "0.5.10"):
            feature = _OLD_MAMBA
        if how := feature.seen(facts, frames):
            seen.append((feature, how))
    return seen


def conflict(found: Found) -> list[tuple[Feature, str]]:
    """The features that meet speculative decoding in this crash (empty: no conflict):
    the error's own text and frames (``found.text`` and ``found.frames``) must show the
    speculative runtime path."""
    where = f"{found.text}\n{found.frames}"
    if not regex(SPEC_PATH, re.M).search(where):
        return []
    return _features(found.facts, where)


def combination(found: Found) -> str:
    algorithm = found.algorithm or "speculative decoding"
    names = [f"{feature.name} (in the {how})" for feature, how in conflict(found)]
    return f"{algorithm} x {' x '.join(names)}" if names else algorithm


def _conflict_detail(found: Found) -> str | None:
    features = conflict(found)
    if not features:
        return None
    feature = features[0][0]
    return (f"The combination: {combination(found)}. Let ddlab find whether "
            f"{feature.name} is the change that breaks it (it starts the server with it off, then "
            f"as deployed): {feature.bisect(found.facts, found.host)}.")


SPEC_FEATURE = Signature(
    "spec_feature_conflict", "spec_feature_conflict",
    "speculative decoding combined with another feature crashed while serving",
    ("Speculative decoding and another feature that changes the batch crashed together in the "
     "speculative path. Serve with the other feature off to confirm (the bisect below does it "
     "for you), then look for a fix of this combination in newer SGLang releases.",),
    patterns=(r".",), context=(SPEC_PATH, FEATURE_FRAMES), absent=(STARTUP_FRAMES.pattern,), priority=1,
    phase="serving", detail=_conflict_detail, cut_ok=True,
    sources=(("0.5.10", "sglang/srt/speculative/eagle_info_v2.py:214"),
             ("0.5.14", "sglang/srt/managers/schedule_batch.py:1586"),
             ("0.5.16", "sglang/srt/mem_cache/kv_cache_builder.py:73"),
             ("0.5.16", "sglang/srt/mem_cache/hybrid_cache/hybrid_cache_controller.py:427"),
             ("0.5.23", "sglang/srt/managers/schedule_batch.py:2322"),
             ("0.5.23", "sglang/srt/speculative/spec_utils.py:1249"),
             ("0.5.23", "sglang/srt/speculative/eagle_worker_v2.py:1979"),
             ("0.5.12", "sglang/srt/layers/attention/flashinfer_backend.py:470"),
             ("0.5.12", "sglang/srt/layers/attention/flashinfer_backend.py:1317"),
             ("0.5.13", "sglang/srt/speculative/ngram_info.py:206")))

# (round 26) the scheduler merges a prefilled batch into the running one (0.5.23 managers/scheduler.py:3961,
# schedule_batch.py:3990), and the speculative input's merge_batch concatenates both batches' hidden states
# along the batch dimension (0.5.23 speculative/eagle_info.py:299, 0.5.13 :827, 0.4.10.post2
# speculative/eagle_utils.py:195, 0.5.23 dflash_info_v2.py:270): torch's cat check says another width in a
# later dimension ("Sizes of tensors must match except in dimension 0"). Both are hidden states the target
# and the draft model write in turn, so another width is a draft whose hidden size is not the target's
# (STANDALONE's draft model of another size: 0.5.13 :817 carries none between its batches)
_MERGE_HIDDEN = (r"speculative[/\\]\w+\.py\", line \d+, in merge_batch\n\s*self\.hidden_states = torch\.cat\(\n"
                 r"(?:\s*[~^]+\n)?(?![ \t]*File \")")


def _widths_detail(found: Found) -> str | None:
    match = regex(r"Expected size (\d+) but got size (\d+)").search(found.text)
    return (f"The widths: {match[1]} (the running batch's hidden states) and {match[2]} (the batch merged "
            "into it).") if match else None


DRAFT_HIDDEN_MERGE = Signature(
    "draft_hidden_merge", "draft_incompatible", "the draft model's hidden size is not the target's",
    ("Two batches' speculative inputs hold hidden states of different widths when the scheduler merges "
     "them: the draft model's hidden size is not the target's. Serve a draft of the target's hidden size "
     "(a drafter made for this target), or, for a STANDALONE draft model of another size, upgrade SGLang "
     "(0.5.13 and later keep no hidden states between STANDALONE batches).",),
    types=r"RuntimeError", patterns=(r"Sizes of tensors must match except in dimension 0\. "
                                     r"Expected size \d+ but got size \d+",),
    context=(_MERGE_HIDDEN,), priority=86, phase="serving", running=True, detail=_widths_detail,
    sources=(("0.5.23", "sglang/srt/speculative/eagle_info.py:299"),
             ("0.5.13", "sglang/srt/speculative/eagle_info.py:827"),
             ("0.5.13", "sglang/srt/speculative/eagle_info.py:817"),
             ("0.4.10.post2", "sglang/srt/speculative/eagle_utils.py:195"),
             ("0.5.23", "sglang/srt/speculative/dflash_info_v2.py:270"),
             ("0.5.23", "sglang/srt/managers/scheduler.py:3961"),
             ("torch", "aten/src/ATen/native/TensorShape.h (check_cat_shape_except_dim: Sizes of tensors must "
                       "match except in dimension {}. Expected size {} but got size {} for tensor number {} "
                       "in the list.)")))

# (round 93) an EAGLE draft's fc, built for twice its hidden size (0.4.3.post2 models/llama_eagle.py:74), takes its
# embedding and the target's hidden states side by side (:88; 0.5.10 :97, qwen2_eagle.py:98, llama_eagle3.py:177):
# torch's matmul refusing them there is a draft made for a target of another hidden size, in capture or eager alike
DRAFT_FC_SHAPE = Signature(
    "draft_fc_shape", "draft_incompatible", "the EAGLE draft model was made for a target of another hidden size",
    ("The EAGLE draft's fc cannot take the target's hidden states: serve a draft made for this target "
     "(`--speculative-draft-model-path`).",), patterns=(r"mat1 and mat2 shapes cannot be multiplied",),
    context=(r"models[/\\]\w*eagle\w*\.py\", line \d+, in forward\n\s*\w+(?:, _)? = self\.fc\(",), priority=86,
    sources=(("sglang 0.4.3.post2", "sglang/srt/models/llama_eagle.py:88"),
             ("0.5.10", "sglang/srt/models/llama_eagle.py:97"),
             ("sglang 0.4.3.post2", "sglang/srt/speculative/eagle_draft_cuda_graph_runner.py:82")))
SIGNATURES = [SPEC_FEATURE, DRAFT_HIDDEN_MERGE, DRAFT_FC_SHAPE]
