"""A flashinfer run refusing q/k dtypes other than its plan was given (``kernel_config_unsupported``, round 81).

flashinfer's attention wrappers split each batch's work in two: ``plan()`` schedules it for the q and KV dtypes
it is told (``q_data_type``, ``kv_data_type``: flashinfer 0.2.0 picked fp16 where the caller named none), and
``run()`` first checks the tensors it is handed against them with ``_check_cached_qkv_data_type``, which raises
ValueError "The dtype of q {q.dtype} does not match the q_data_type {dtype_q} specified in plan function." (or of
k against kv_data_type) and nothing else (flashinfer v0.2.0 flashinfer/utils.py:195-205, the raises at :199 and
:203, called from prefill.py:2242 in BatchPrefillWithRaggedKVCacheWrapper.run; 0.5.0 utils.py:257-267, the raises
at :261 and :265). The tensors SGLang handed the kernel are in a dtype the plan did not schedule for, as a kernel
refusing a tensor's dtype is (:mod:`.kernels`, ``kernel_dtype_refused``). A traceback cut in that function's
raise (its exception line lost) can only be that check: it is read so too. :mod:`.device` splices this list after
:mod:`.cooperative`'s.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "PLAN_DTYPE_MISMATCH"]

_MISMATCH = (r"\bThe dtype of [qk] (?:torch\.)?\w+ does not match the (?:q|kv)_data_type (?:torch\.)?\w+ "
             r"specified in plan function")
# the check's own frame, cut at its raise: flashinfer's utils.py, the function, then its "raise ValueError("
_CHECK_FRAME = (r'^\s*File "[^"\n]*flashinfer[/\\]utils\.py", line \d+, in _check_cached_qkv_data_type\s*\n'
                r'\s*raise ValueError\(')
PLAN_DTYPE_MISMATCH = Signature(
    "plan_dtype_mismatch", "kernel_config_unsupported",
    "a flashinfer wrapper was run on q/k tensors of another dtype than its plan was given",
    ("flashinfer's attention wrapper checked the q and k tensors it was run on against the dtypes its plan() was "
     "given and refused them (flashinfer 0.2.0 plans for fp16 where the caller names no dtype): this model's "
     "dtype (a bf16 model, an fp8 KV cache) is not the one the wrapper was planned for. Use an SGLang release "
     "made for the installed flashinfer (`pip show flashinfer-python sglang` says which are installed), choose "
     "another attention backend (`--attention-backend triton`), or run the model in the planned dtype "
     "(`--dtype float16`).",),
    types=r"(?:\w+\.)*ValueError", patterns=(_MISMATCH,), context=(_CHECK_FRAME + "|" + _MISMATCH,),
    priority=70, cut_ok=True,
    sources=(("flashinfer v0.2.0 (flashinfer-ai/flashinfer)", "flashinfer/utils.py:199 (The dtype of q {q.dtype} "
                                                              "does not match the q_data_type {dtype_q} specified "
                                                              "in plan function.), :203 (of k, kv_data_type)"),
             ("flashinfer v0.2.0 (flashinfer-ai/flashinfer)", "flashinfer/prefill.py:2242 (run: "
                                                              "_check_cached_qkv_data_type), :2330 "
                                                              "(forward_return_lse)"),
             ("flashinfer 0.5.0", "flashinfer/utils.py:261, :265 (the same raises)")))

SIGNATURES = [PLAN_DTYPE_MISMATCH]
