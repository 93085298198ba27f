"""A job the scheduler ended, as a verdict's diagnosis: never a crash of the server.

Slurm ends a job for its own reasons (TIMEOUT, PREEMPTED, NODE_FAIL, BOOT_FAIL,
OUT_OF_MEMORY, CANCELLED by someone else, DEADLINE); the watch
(:mod:`ddlab.lab.watch`) gives it the state ``scheduler_ended`` and this
diagnosis: kind ``slurm_<state>``, a cause naming the job, node, state and the
profile's time limit, Slurm's own lines from the job's output as evidence, and
advice per state.
"""

from __future__ import annotations

import dataclasses
import re

from ddlab.diagnosis import diagnosis as dx
from ddlab.hosts.services import ServiceState

__all__ = ["scheduler_ended"]


# what Slurm itself writes into a job's output when it ends it ("slurmstepd: error: ***
# JOB 123 ON node1 CANCELLED AT ... DUE TO TIME LIMIT ***"), the evidence of its hand
_SLURM_LINE = re.compile(r"\*\*\* (?:JOB|STEP) \S+ .*\*\*\*|^slurmstepd\S*: error:")
_SLURM_ADVICE = {
    "TIMEOUT": "raise time_limit in the host profile ({limit}): one job holds the server's "
               "start, the probes and the benchmark; or a partition with a longer MaxTime (sinfo -s)",
    "PREEMPTED": "a job of higher priority took the node: run it again (a sweep's resume "
                 "queues the cell again), or a partition / QOS that is not preemptible "
                 "(partition, or sbatch_options: [--qos=...])",
    "NODE_FAIL": "the node {node} failed under the job: run it again (Slurm places it "
                 "elsewhere); if it repeats, sbatch_options: [--exclude={node}] and tell the admins",
    "BOOT_FAIL": "the node {node} did not boot for the job: run it again; if it repeats, "
                 "sbatch_options: [--exclude={node}] and tell the admins",
    "OUT_OF_MEMORY": "the job went over its host-memory limit (the node's cgroup; GPU memory "
                     "would be a crash): ask for more, sbatch_options: [--mem=...]",
    "CANCELLED": "someone else (or an admin's tool) cancelled job {job}: run it again; "
                 "sacct -j {job} (or the controller's log) says who",
    "DEADLINE": "the job's --deadline passed before it could finish: move or drop it in "
                "sbatch_options",
}


def scheduler_ended(diagnosis: dx.Diagnosis, s: ServiceState, text: str,
                    time_limit: str) -> dx.Diagnosis:
    """Slurm ended the job (time limit, preemption, node failure ...): not a crash of the
    server. The cause names the job, node, state and the profile's time limit."""
    state, job, node = s.scheduler_state, s.invocation_id or "?", s.node or "?"
    limit = (f"time_limit {time_limit}" if time_limit
             else "time_limit unset, so the partition's default")
    reason = f" ({s.scheduler_reason})" if s.scheduler_reason else ""
    lines = [dx.strip_prefix(l) for l in text.strip().splitlines() if l.strip()]
    advice = _SLURM_ADVICE.get(state, "Slurm ended the job, not the server: run it again; "
                                      "scontrol show job {job} says why")
    return dataclasses.replace(
        diagnosis, crashed=False, kind=f"slurm_{state.lower()}", signature=None, title=None,
        cause=f"Slurm ended job {job} on node {node}: {state}{reason}, in phase "
              f"{diagnosis.phase}; the profile's {limit}",
        evidence=[line for line in lines if _SLURM_LINE.search(line)][-5:] or lines[-5:],
        exit_status=f"{state}: " + (f"killed by signal {s.exit_status}" if s.exit_kind == "killed"
                                    else f"exit status {s.exit_status}"), sources=[],
        suggestion=advice.format(limit=limit, node=node, job=job))
