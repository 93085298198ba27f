"""Second readings of a root cause, with what the rest of the log says.

Contract: :func:`on_graph` says whether the batch that crashed ran on a CUDA
graph (the last batch line of its rank before the crash says ``cuda graph:
True|False``; else graphs were captured: True; else None);
:func:`spec_conflict` says whether a crash is speculative decoding meeting
another feature (:mod:`.kinds.speculative`) and may be called that: an
unknown or cut crash, a generic echo, or a graph-replay / eager-runner reading
whose innermost frames are the feature's own code; never a startup crash, never
a more specific kind; :func:`shm_reading` reads a native crash by SIGBUS in a log that says
the disk space ran out (ENOSPC) as shared memory full (``host_oom``).

Why apart from the signatures: both need more than the traceback (the batch
lines before it, the server args, the phase), which a signature never sees.
"""

from __future__ import annotations

import re

from ddlab.crashes.frames import shows_startup
from ddlab.crashes.kinds.memory import SHM_FULL
from ddlab.crashes.kinds.native import NATIVE_CRASH
from ddlab.crashes.kinds.speculative import FEATURE_FRAMES, SPEC_FEATURE, conflict
from ddlab.diagnosis.logtext import Line
from ddlab.diagnosis.phase import is_startup
from ddlab.diagnosis.rootcause import Candidate
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["on_graph", "spec_conflict", "shm_reading"]

# SIGBUS by name (faulthandler, the shell) or as a child's exit code (SGLang's "exit code: -7",
# "crashed with exit code -7"; dynamo's "Exit code: -7 (SIGBUS)")
_SIGBUS_RE = re.compile(r"\bBus error\b|\bSIGBUS\b|exit code:? -7\b", re.I)
_ENOSPC_RE = re.compile(r"\[Errno 28\] No space left on device")


def shm_reading(signature: Signature | None, cause: str, lines: list[Line]) -> Signature | None:
    """A native crash by SIGBUS where the log says no space was left (ENOSPC): /dev/shm full
    (:data:`~ddlab.crashes.kinds.memory.SHM_FULL`); any other reading is kept."""
    if signature is NATIVE_CRASH and _SIGBUS_RE.search(cause) and any(_ENOSPC_RE.search(ln.msg) for ln in lines):
        return SHM_FULL
    return signature

_GRAPH_SAID_RE = re.compile(r"\b(?:Prefill|Decode) batch\b.*\bcuda graph: (True|False)")
_GRAPHS_CAPTURED_RE = re.compile(r"Capture\b.{0,40}\bcuda graph end", re.I)


def on_graph(lines: list[Line], best: Candidate) -> bool | None:
    """Whether the batch that crashed ran on a CUDA graph: the last batch line of its rank
    before the crash says so; else graphs were captured (True); else not known."""
    before = [ln for ln in lines if ln.no < best.first_no
              and (best.rank is None or ln.rank is None or ln.rank == best.rank)]
    said = [m[1] for ln in before if (m := _GRAPH_SAID_RE.search(ln.msg))]
    if said:
        return said[-1] == "True"
    return True if any(_GRAPHS_CAPTURED_RE.search(ln.msg) for ln in before) else None


def spec_conflict(best: Candidate, signature: Signature | None, found: Found) -> bool:
    """Speculative decoding x another feature (kinds.speculative): it replaces an unknown or
    cut crash, and a graph-replay / eager-runner reading whose innermost frames are the
    feature's own code; never a startup crash, never a more specific kind."""
    if signature is SPEC_FEATURE:
        return True
    if is_startup(found.phase) or shows_startup(found.frames):
        return False
    if signature is not None and signature.kind in ("cuda_graph_replay", "forward_input_mismatch"):
        raised = best.raised
        inner = "\n".join([raised.text] + [f"{f.func} {f.file} {f.code}" for f in raised.frames[-2:]]) \
            if raised is not None else ""
        if not regex(FEATURE_FRAMES, re.I | re.M).search(inner):
            return False
    elif signature is not None and not best.wrapper:
        return False
    return bool(conflict(found))
