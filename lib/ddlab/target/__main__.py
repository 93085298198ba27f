"""``python -m ddlab.target [SGLang flags]``: run the target server.

Launched this way it first warns as ``python -m sglang.launch_server`` does in SGLang
0.5.23 (``sglang/launch_server.py:71-77``, a ``warnings.warn`` before anything else),
naming ``ddlab target`` where SGLang names ``sglang serve``; ``--log-format 0.4`` warns
nothing, as 0.4's launcher.
"""

import logging
import os
import sys
import warnings

from ddlab.target.args import log_format_of
from ddlab.target.log_lines import generation
from ddlab.target.vllm_args import dialect_of

said = None if dialect_of(sys.argv[1:])[0] != "sglang" else \
    generation(log_format_of(sys.argv[1:])).entrypoint_warning("ddlab.target", "ddlab target")
if said:
    warnings.warn(
        said, UserWarning, stacklevel=1)

from ddlab.target import main  # noqa: E402 (after the warning, as SGLang's launcher warns first)

code = main()
# A server that ended as it meant to (drained, or refused its flags) skips the interpreter's
# teardown of torch's modules: 0.4-0.5 s of CPU per process (`python -c "import torch"` against
# the same with os._exit, 2-core VM, 2026-12-03), paid by every start of a sweep's cells. The
# logs are flushed first; the target registers no atexit work. An exception still ends the
# usual way, with its traceback.
logging.shutdown()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code if isinstance(code, int) else 0)
