"""A multimodal model's Hugging Face processor that does not fit the call vLLM makes of it (vLLM round 91).

vLLM builds each multimodal model's inputs through the model's HF processor: transformers' own class, or the
checkpoint's code under ``--trust-remote-code``, given vLLM's tokenizer (``tokenizer=self.tokenizer``,
inputs/registry.py:126 (0.8.5.post1)) and called in ``call_hf_processor``, whose failure vLLM re-raises as
"Failed to apply <Processor> on data=... with kwargs=..." from the cause (:130-160 (0.8.5.post1); 0.7.2
:155-185). The engine calls it first while it profiles memory with dummy inputs (multimodal/profiling.py
``_get_dummy_mm_inputs``, :179 (0.8.5.post1), :141 (0.7.2)), before any request.

``dependency_mismatch``: the processor raising a TypeError or AttributeError inside its own ``__call__`` under
that profiling call (transformers' Qwen2-Audio processor of a release that took no text-only call, ``len(audios)``
of None; later releases test ``if audio is not None``, transformers 4.53.1 qwen2_audio/processing_qwen2_audio.py
:129), or vLLM's model code calling a method the installed processor lacks (vLLM 0.7.2 minicpmo.py:236,
``get_hf_processor().get_audio_placeholder(``, a method of the checkpoint's newer processor code).
``bad_argument``: transformers' processor reading an attribute of vLLM's MistralTokenizer, the tokenizer vLLM
builds for ``--tokenizer-mode mistral`` alone (transformers_utils/tokenizer.py:210-211 (0.8.5.post1)) and hands
to an HF-format model's processor, which needs a Hugging Face tokenizer (pixtral/processing_pixtral.py:165,
``self.tokenizer.init_kwargs`` (transformers 4.53.1)).
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "PROCESSOR_CALL_UNFIT", "PROCESSOR_METHOD_MISSING", "MISTRAL_TOKENIZER_HF_PROCESSOR"]

_CARET = r"(?:[^\n]*[~^]{3,}[ \t]*\n)?"
# a transformers processor's __call__ is the raising frame of the TypeError / AttributeError (its code line, the
# carets of Python 3.11 and later, then the exception's line)
_PROCESSOR_RAISED = (r'transformers[/\\]models[/\\]\w+[/\\]processing_\w+\.py", line \d+, in __call__[ \t]*\n'
                     r'[^\n]*\n' + _CARET + r'[^\n]*\b(?:TypeError|AttributeError): ')
_CALLED_BY_VLLM = r'vllm[/\\]inputs[/\\]registry\.py", line \d+, in call_hf_processor\b'
_PROFILING = r'\bin (?:_get_dummy_mm_inputs|dummy_data_for_profiling|get_decoder_dummy_data|profile_run)\b'
_MISTRAL_TOKENIZER = r"'MistralTokenizer' object has no attribute '\w+'"
# vLLM's re-raise (its type RuntimeError), or the cause itself where the paste holds no more
_FAILED_TO_APPLY = r"\bFailed to apply \w+ on data="
_CAUSE = r"^(?:\w+\.)*(?:TypeError|AttributeError): "

PROCESSOR_CALL_UNFIT = Signature(
    "vllm_processor_call_unfit", "dependency_mismatch",
    "the model's HF processor failed on the dummy inputs vLLM profiles with",
    ("The model's Hugging Face processor (transformers' class, or the checkpoint's own code under "
     "`--trust-remote-code`) raised inside its own __call__ when vLLM called it with the dummy inputs it profiles "
     "memory with, before any request: the installed processor does not take the call this vLLM makes. Install "
     "the transformers release this vLLM pins (`pip show vllm transformers`; `pip install vllm==X` in a fresh "
     "environment brings it), or, for a checkpoint's own processor code, download the model repository's latest "
     "revision.",),
    types=r"(?:\w+\.)*(?:RuntimeError|TypeError|AttributeError)", patterns=(_FAILED_TO_APPLY, _CAUSE),
    context=(_PROCESSOR_RAISED, _CALLED_BY_VLLM, _PROFILING),
    absent=(_MISTRAL_TOKENIZER, r"got an unexpected keyword argument"), priority=80,
    sources=(("vllm 0.8.5.post1", "vllm/inputs/registry.py:157"),
             ("vllm 0.7.2", "vllm/inputs/registry.py:182"),
             ("vllm 0.8.5.post1", "vllm/multimodal/profiling.py:179"),
             ("transformers 4.53.1", "transformers/models/qwen2_audio/processing_qwen2_audio.py:129")))

# vLLM's model code calls a method of the HF processor it got (``self.info.get_hf_processor().<method>(``) that the
# installed processor class does not have
_METHOD_CALL = (r'vllm[/\\]model_executor[/\\]models[/\\]\w+\.py", line \d+, in \w+[ \t]*\n'
                r'[^\n]*\bget_hf_processor\([^\n]*\)\.\w+\(')
PROCESSOR_METHOD_MISSING = Signature(
    "vllm_processor_method_missing", "dependency_mismatch",
    "vLLM's model code calls a method the installed HF processor lacks",
    ("vLLM's code for this model called a method of the model's Hugging Face processor that the installed "
     "processor does not have: the processor (the checkpoint's own code under `--trust-remote-code`, or "
     "transformers' class) is of another revision than this vLLM was written against. Download the model "
     "repository's latest revision (its processing_*.py), or install the transformers this vLLM pins; `pip show "
     "vllm transformers` shows both.",),
    types=r"(?:\w+\.)*AttributeError", patterns=(r"'\w*Processor' object has no attribute '\w+'",),
    context=(_METHOD_CALL,), priority=80,
    sources=(("vllm 0.7.2", "vllm/model_executor/models/minicpmo.py:236"),))

MISTRAL_TOKENIZER_HF_PROCESSOR = Signature(
    "vllm_mistral_tokenizer_hf_processor", "bad_argument",
    "vLLM's Mistral tokenizer (tokenizer mode mistral) handed to a model's Hugging Face processor",
    ("vLLM built its Mistral tokenizer (`--tokenizer-mode mistral`) and handed it to the model's Hugging Face "
     "processor, which reads attributes only a Hugging Face tokenizer has: the checkpoint is in Hugging Face "
     "format (config.json, a transformers processor). Drop `--tokenizer-mode mistral` for it, or serve the "
     "Mistral-format files with `--tokenizer-mode mistral --config-format mistral --load-format mistral` "
     "together.",),
    types=r"(?:\w+\.)*(?:RuntimeError|AttributeError)", patterns=(_FAILED_TO_APPLY, _MISTRAL_TOKENIZER),
    context=(r'transformers[/\\]models[/\\]\w+[/\\]processing_\w+\.py", line \d+, in \w+[ \t]*\n[^\n]*\n' + _CARET
             + r"[^\n]*\bAttributeError: " + _MISTRAL_TOKENIZER,), priority=80,
    sources=(("vllm 0.8.5.post1", "vllm/transformers_utils/tokenizer.py:210"),
             ("vllm 0.8.5.post1", "vllm/inputs/registry.py:126"),
             ("transformers 4.53.1", "transformers/models/pixtral/processing_pixtral.py:165")))

SIGNATURES: list[Signature] = [PROCESSOR_CALL_UNFIT, PROCESSOR_METHOD_MISSING, MISTRAL_TOKENIZER_HF_PROCESSOR]
