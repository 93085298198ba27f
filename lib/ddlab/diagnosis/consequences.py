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
- (round 117) a peer lost in a gloo collective (``gloo_peer_lost``: "Connection closed by peer", a read error or
  timeout of gloo's TCP pair) is what every rank still alive raises once another rank died: SGLang's CPU group
  shares each step's requests among the ranks over gloo (0.5.23 sglang/srt/utils/common.py:2715 broadcast_pyobj,
  the group made at distributed/parallel_state.py:404; crashes/kinds/runtime.py GLOO_PEER_LOST). After an earlier
  unexplained exception (h117008: DP0 TP0's scheduler raised, the seven other ranks' loops lost it two seconds
  later) that exception is the death and the cause; a lost peer with no earlier exception stays ``nccl``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["yielded", "SYMPTOM_KINDS"]

SYMPTOM_KINDS = ("native_crash", "health_check")
PEER_ECHOES = ("gloo_peer_lost",)  # (round 117) signatures of a rank that lost a peer: after the peer's exception


def yielded(best: Any, found: list[Any]) -> Any:
    """``best``, or the unexplained exception it is a consequence of (see the module docstring); each is a
    :class:`~ddlab.diagnosis.rootcause.Candidate` (not imported here: rootcause imports this module)."""
    if best.signature is None or (best.signature.kind not in SYMPTOM_KINDS and best.signature.name not in PEER_ECHOES):
        return best
    unexplained = [c for c in found if c.signature is None and not c.wrapper and not c.cut]
    if best.signature.kind == "native_crash" or best.signature.name in PEER_ECHOES:  # teardown, or a peer's death
        unexplained = [c for c in unexplained if c.first_no < best.first_no]
    return min(unexplained, key=lambda c: c.first_no) if unexplained else best
