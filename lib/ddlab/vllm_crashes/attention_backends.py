"""An attention backend forced by ``--attention-backend`` refusing the model's own attention (vLLM round 118).

As each attention layer is built, ``get_attn_backend`` hands the platform the backend the config names
(``attention_config.backend``, v1/attention/selector.py:176 (0.29.0)), set from ``--attention-backend``
(engine/arg_utils.py:2497) or by a model's own config hook where the user named none (Gemma 4 without FA4 takes
TRITON_ATTN only "elif vllm_config.attention_config.backend is None", model_executor/models/config.py:250-254).
CUDA's ``get_attn_backend_cls`` checks that backend alone, with no fallback: its ``validate_configuration`` reasons
make "Selected backend X is not valid for this configuration. Reason: [...]" (platforms/cuda.py:413-430 (0.29.0);
:410-424 (0.28.0)), while vLLM's own choice, with none selected, tries every backend ("No valid attention backend
found", :449-453 (0.28.0)). The reasons that name the model's attention (its head size, MLA or not, sinks, sparse
or not, a sliding window, an attention type: v1/attention/backend.py:286-316 (0.29.0); FlashAttention 2 takes head
sizes up to 256, v1/attention/backends/flash_attn.py:168-175, TRITON_ATTN any from 32, triton_attn.py:347-348)
are a backend whose kernels do not take this model (``kernel_config_unsupported``); vLLM would have picked one that
does. Other reasons are not read here: the GPU's
compute capability, a KV-cache dtype or block size another flag chose, an import error, or a list mixing them.
"""

from __future__ import annotations

import re

from ddlab.crashes.signature import Found, Signature

__all__ = ["SIGNATURES", "SELECTED_ATTENTION_BACKEND_REFUSED"]

# validate_configuration's reasons that are the model's attention, not the GPU or another flag
_MODEL_REASON = (r"'(?:head_size|(?:non-)?MLA|attention sinks|(?:non-)?sparse|sliding window|attention type \S+)"
                 r" not supported'")
_REFUSED = (r"\bSelected backend (?:AttentionBackendEnum\.)?\w+ is not valid for this configuration\. "
            rf"Reason: \[{_MODEL_REASON}(?:, {_MODEL_REASON})*\]")
_REFUSED_RE = re.compile(r"Selected backend (?:AttentionBackendEnum\.)?(\w+) is not valid for this configuration\. "
                         r"Reason: \[([^\]]*)\]")


def _refused_detail(found: Found) -> str | None:
    match = _REFUSED_RE.search(found.text)
    if not match:
        return None
    reasons = ", ".join(r.strip(" '") for r in match[2].split(","))
    return f"The backend forced was {match[1]}; it refused: {reasons}."


SELECTED_ATTENTION_BACKEND_REFUSED = Signature(
    "vllm_selected_attention_backend_refused", "kernel_config_unsupported",
    "the attention backend forced by --attention-backend does not take this model's attention",
    ("vLLM checks only the attention backend named with `--attention-backend`, with no fallback, and its kernels "
     "refuse this model's attention for the reasons listed (a head size beyond what the backend's kernels take, "
     "MLA, attention sinks, a sliding window). Drop `--attention-backend` to let vLLM choose a backend that takes "
     "the model, or name one whose kernels take it (TRITON_ATTN takes any head size from 32, beyond "
     "FlashAttention 2's 256).",),
    types=r"(?:\w+\.)*ValueError", patterns=(_REFUSED,), priority=75, detail=_refused_detail,
    sources=(("vllm 0.29.0", "vllm/platforms/cuda.py:427 (raise ValueError(... Selected backend ... is not valid for "
                             "this configuration. Reason: {invalid_reasons}))"),
             ("vllm 0.29.0", "vllm/v1/attention/backend.py:286 (head_size not supported)"),
             ("vllm 0.29.0", "vllm/v1/attention/backends/flash_attn.py:168 (supports_head_size)"),
             ("vllm 0.29.0", "vllm/v1/attention/backends/triton_attn.py:348 (return head_size >= 32)"),
             ("vllm 0.29.0", "vllm/v1/attention/selector.py:176 (backend = attention_config.backend)"),
             ("vllm 0.29.0", "vllm/model_executor/models/config.py:250 (elif vllm_config.attention_config.backend "
                             "is None: ... TRITON_ATTN)"),
             ("vllm 0.28.0", "vllm/platforms/cuda.py:421")))

SIGNATURES = [SELECTED_ATTENTION_BACKEND_REFUSED]
