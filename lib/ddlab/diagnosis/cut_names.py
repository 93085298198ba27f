"""What a traceback that a paste cut still names: a torch type cut inside its name, IPython's header, and
an exception line a paste shifted to the right.

Contract: :func:`cut_type` is the torch exception type whose name a paste cut (``torch.O``), where only one fits;
:func:`ipython_type` the exception IPython's traceback header names above the frames (vLLM round 64), which a paste
cut before the exception line still shows. :mod:`.tracebacks` completes its cut chains with them.
:func:`unshifted` is an exception line a paste indented (round 85), without that indentation; any other line as is.
:data:`HEAD_CUT` (vLLM round 86) stands where a frame line's ``File "`` would, for a paste's first line cut inside the
frame's path (``/python3.12/site-packages/vllm/.../lora_shrink.py", line 151, in _lora_shrink``): the rest of the
frame line, whole, still says where.
"""

from __future__ import annotations

import re

__all__ = ["HEAD_CUT", "cut_type", "ipython_type", "unshifted"]

# a path's tail with at least one "/", the closing quote, the line and the function, and nothing after them
HEAD_CUT = r'(?=[\w.~-]*/[\w.~/-]*\.py", line \d+, in [\w<>]+\s*$)'

# torch's own exception types as its C++ extension names them (torch 2.13.0 libtorch_python,
# torch/csrc/Exceptions.cpp: PyErr_NewExceptionWithDoc), and the torch.cuda spelling of older
# releases: a paste cut inside one of these names ("torch.O") still says which, when only one fits
_TORCH_TYPES = ("torch.OutOfMemoryError", "torch.cuda.OutOfMemoryError", "torch.AcceleratorError",
                "torch.FatalError", "torch.linalg.LinAlgError", "torch.distributed.DistError",
                "torch.distributed.DistBackendError", "torch.distributed.DistNetworkError",
                "torch.distributed.DistStoreError", "torch.distributed.QueueEmptyError")


def cut_type(msg: str) -> str | None:
    """The torch exception type whose name a paste cut (``torch.O``), when only one fits."""
    text = msg.strip()
    if not re.fullmatch(r"torch\.[\w.]+", text):
        return None
    fits = [name for name in _TORCH_TYPES if name.startswith(text) and name != text]
    return fits[0] if len(fits) == 1 else None


# (vLLM round 64) IPython prints the exception's type first, then "Traceback (most recent call last)" right-justified,
# no colon (IPython 9.19.1 core/ultratb.py:754-757, the simplified header of a notebook cell's traceback)
_IPYTHON_HEADER_RE = re.compile(r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))\s{2,}"
                                r"Traceback \(most recent call last\)\s*$")


def ipython_type(msg: str) -> str | None:
    """The exception type IPython's traceback header ``msg`` names, if it is one."""
    match = _IPYTHON_HEADER_RE.match(msg.strip())
    return match["type"] if match else None


def unshifted(msg: str, frames: list, is_exception) -> str:
    """``msg`` without its indentation where it is an exception line (``is_exception(text, strict=True)``:
    one with its message) a paste indented, below a frame's code line and less indented than that code line: Python
    prints the code deeper than its frame and the exception line flush left (CPython 3.11.7
    Lib/traceback.py:462, :466 StackSummary.format_frame_summary; :866 format_exception_only, :162); a code
    line's own continuation is never less indented than the line it continues."""
    code_at = frames[-1].code_at if frames else None
    text = msg.lstrip(" ")
    if code_at is None or len(msg) - len(text) >= len(code_at.msg) - len(code_at.msg.lstrip(" ")):
        return msg
    return text if is_exception(text, strict=True) else msg
