"""A recognised error that is a consequence of an unexplained exception, which is then the cause (rule 3's
exceptions in :mod:`.rootcause`).

Contract: :func:`yielded` takes the best recognised candidate and all of them and returns the candidate that
explains the crash: ``best``, or the earliest complete unexplained exception (no signature, no wrapper, not cut)
where ``best`` only reports the server's state after a death:

- a fatal signal (``native_crash``) after an unexplained exception is its teardown (moved here from
  :func:`.rootcause._pick`, unchanged);
- (round 98) a probe's failure (any ``health_check`` reading: the HTTP server's ``/health`` 503 first) is what
  the server answers while it is not up, before its warmup ends or after a rank died (0.5.5.post3
  sglang/srt/entrypoints/http_server.py:420-421 ``ServerStatus.Starting``, :461-481 no reply within
  ``HEALTH_CHECK_TIMEOUT``): beside a scheduler's exception no signature reads it says nothing of its own, before
  or after it. The exception is the cause (h98001: a PD decode scheduler's AttributeError in its warmup, 503s
  polled before it; h97015: the same after it).
"""

from __future__ import annotations

from typing import Any

__all__ = ["yielded", "SYMPTOM_KINDS"]

SYMPTOM_KINDS = ("native_crash", "health_check")


def yielded(best: Any, found: list[Any]) -> Any:
    """``best``, or the unexplained exception it is a consequence of (see the module docstring); each is a
    :class:`~ddlab.diagnosis.rootcause.Candidate` (not imported here: rootcause imports this module)."""
    if best.signature is None or best.signature.kind not in SYMPTOM_KINDS:
        return best
    unexplained = [c for c in found if c.signature is None and not c.wrapper and not c.cut]
    if best.signature.kind == "native_crash":  # a signal after an unexplained exception: teardown
        unexplained = [c for c in unexplained if c.first_no < best.first_no]
    return min(unexplained, key=lambda c: c.first_no) if unexplained else best
