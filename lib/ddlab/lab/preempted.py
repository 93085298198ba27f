"""A host another ddlab run took, as a verdict's diagnosis: never a crash of the server.

Another run on the same host (a second checkout on the same machine, a colleague
on the same GPU box) that takes the lock with ``--force`` stops the variant this
run had deployed: to the watch that looks like a server killed by signal 15. The
watch (:mod:`ddlab.lab.watch`) gives it the state ``preempted`` and this
diagnosis: kind ``preempted``, a cause naming the run that took the host (user,
machine, pid, its command, its project folder, when: :class:`ddlab.hosts.lock.Preemption`),
and as next step to run again once that run is done (a sweep resumes the cell).
"""

from __future__ import annotations

import dataclasses

from ddlab.diagnosis import diagnosis as dx
from ddlab.hosts.lock import Preemption
from ddlab.hosts.services import ServiceState

__all__ = ["preempted", "PREEMPTED_ADVICE"]

PREEMPTED_ADVICE = ("the host is the other run's now: run this again once it is done (--wait "
                    "queues behind it); a sweep's resume runs the preempted cell again")


def preempted(diagnosis: dx.Diagnosis, taken: Preemption | None, host: str,
              state: ServiceState | None) -> dx.Diagnosis:
    """Another ddlab run took ``host`` (``taken`` says who and when): not a crash."""
    who = taken.describe() if taken is not None else "another ddlab run took the host"
    ended = ""
    if state is not None and state.exit_kind == "killed":
        ended = f"signal {state.exit_status}"
    elif state is not None and state.exit_status is not None:
        ended = f"exit status {state.exit_status}"
    return dataclasses.replace(
        diagnosis, crashed=False, kind="preempted", signature=None, sources=[],
        title="preempted: another ddlab run took the host",
        cause=f"host {host} was taken from this run: {who}",
        exit_status=(f"stopped by the run that took the host ({ended})" if ended else None),
        suggestion=PREEMPTED_ADVICE)
