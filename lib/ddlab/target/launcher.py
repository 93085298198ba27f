"""What SGLang's launcher checks and logs before it starts a scheduler, in its order.

Contract: :func:`resolve` is the target's ``ServerArgs.resolve_once()`` (0.5.23
``sglang/launch_server.py:29``, ``arg_groups/pipeline.py:20-330``): it logs the
launcher's lines and raises SGLang's errors, before ``server_args=`` and before
any scheduler line, in this order:

1. the model's config is read (``pipeline.py:122``, ``get_config``): a path that
   names no model is ``OSError: ... is not a local folder and is not a valid
   model identifier ...``; the model config is built (``model_config_of``,
   ``arg_groups/model_override_base.py:191-213``): a ``--context-length`` longer
   than the model's is ``ValueError: User-specified context_length ...`` (or the
   warning, where the environment allows it);
2. ``Attention backend not specified. Use torch_native backend by default.``
   (``arg_groups/overrides.py:1127-1138``, after ``model_config_of``: a failed
   config never gets this line);
3. the speculative hook (``pipeline.py:306``): the draft model's config
   (``speculative_hook.py:154``), the algorithm's name
   (``Unknown speculative algorithm name: X``, ``:242``), a draft model required
   (``:324-327``), ``Max running requests is reset to 48 ...`` (``:438-446``).

The caller (``server.main``) logs ``kill_process_tree called: ...``
(``launch_server.py:85-86``'s ``finally``) and the traceback when it raises,
and exits 1, as the launcher does.
"""

from __future__ import annotations

import logging

from ddlab.target.args import speculative_algorithm
from ddlab.target.checkpoint import read_config
from ddlab.target.model_runner import context_length
from ddlab.target.spec import draft_path

__all__ = ["resolve"]

logger = logging.getLogger("ddlab.target")


def resolve(args, words) -> None:
    """Check ``args`` and log the launcher's notes as SGLang's launcher does (see the module)."""
    config = read_config(args.model_path)
    context_length(args.context_length, config["context_length"], words)
    if note := words.attention_note():
        logger.info(note)
    if args.speculative_algorithm is not None and args.speculative_draft_model_path:
        read_config(args.speculative_draft_model_path)
    if speculative_algorithm(args.speculative_algorithm):
        draft_path(args)
    for note in words.speculative_notes(args):
        logger.warning(note)
