"""The Slurm service manager: each start of a server is a batch job on a cluster.

The profile's host is the cluster's *login host* (``scheduler: slurm``); the
server runs on the node Slurm allocates. Each service has a folder
``<log_dir>/<name>/`` (``log_dir`` defaults to ``<state_dir>/jobs``; with
``max_jobs`` > 1 a given one gets a ``slot-<i>/`` per pool slot; the nodes must
see it: shared storage) holding ``spec.json`` (the definition:
argv, env, workdir; 0600), ``job.sh`` (the batch script: the environment
exported, ``cd`` to the workdir, ``exec`` of the argv, every value quoted with
``shlex``; 0600), and per start ``job`` (the job id), ``slurm-<id>.out`` (the
job's output: stdout and stderr) and ``stopped`` (present when ddlab cancelled
it, so its own ``scancel`` is not reported as the scheduler's doing).

- ``start`` = ``sbatch --parsable`` with the profile's partition, account,
  gres, time limit and ``sbatch_options``; the job id is the invocation id,
  written to the folder by the same command that submits it.
- ``state`` = one command: ``scontrol show job -o ID``, or ``sacct -j ID``
  once the controller forgot the job. A watcher polls every ~0.2 s, but the
  controller is asked at most once per ``query_interval_s`` (1 s) per job, the
  last answer standing in between: a controller serves the whole cluster, and
  sites rate-limit each user's RPCs (a sweep watches ``max_jobs`` jobs). PENDING /
  CONFIGURING are *activating*, RUNNING *active/running*, COMPLETING
  *deactivating* (the final state comes next: a TIMEOUT reads COMPLETING
  first), COMPLETED / FAILED *inactive* / *failed* with the exit status; the
  states Slurm ends a job with (:data:`~ddlab.hosts.services.SCHEDULER_ENDED`:
  TIMEOUT, PREEMPTED, NODE_FAIL, OUT_OF_MEMORY, CANCELLED by someone else ...)
  are ``result="scheduler-ended"`` with ``scheduler_state``: never a crash.
  A controller that does not answer is waited out for ``controller_grace_s``
  (the last state stands), then a transient :class:`HostError`.
- ``stop`` / ``remove`` = ``scancel``, then wait (bounded, a heartbeat when it
  takes long) until the job no longer runs, pends or completes.
- ``read_logs`` = the job's output file from a byte-offset cursor (bytes read,
  bounded, never through a symbolic link: :func:`~ddlab.hosts.services.read_log_file`).

Every command is an argv list over the transport (which quotes it); the two
small shell scripts are constant text with every value a positional argument.
"""

from __future__ import annotations

import json
import re
import shlex
import time

from ddlab.core.errors import ConfigError, HostError, ServiceError
from ddlab.core.log import get_logger
from ddlab.core.progress import Heartbeat
from ddlab.hosts.profiles import HostProfile
from ddlab.hosts.services import (SCHEDULER_ENDED, ServiceManager, ServiceSpec, ServiceState,
                                  read_log_file, unit_name)
from ddlab.hosts.transport import Transport

__all__ = ["SlurmManager", "job_state", "parse_record", "batch_script", "LIVE_STATES"]

log = get_logger(__name__)

_PENDING = ("PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD",
            "RESIZING")
# a job in one of these still holds (or waits for) a node: stop waits until it is none of them
LIVE_STATES = (*_PENDING, "RUNNING", "SIGNALING", "SUSPENDED", "STOPPED", "COMPLETING", "STAGE_OUT")
_JOB_ID = re.compile(r"\d+(_\d+)?")
_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=")
_NO_NODE = ("", "(null)", "None", "None assigned")

_SUBMIT = r"""d=$1; shift
rm -f "$d/stopped" "$d/job"
out=$("$@") || exit $?
id=${out%%;*}
printf '%s\n' "$id" > "$d/job.tmp" && mv -f "$d/job.tmp" "$d/job"
printf '%s\n' "$id"
"""

_STATE = r"""cd "$1" 2>/dev/null || exit 0
[ ! -f spec.json ] || echo installed=1
[ ! -f stopped ] || echo stopped=1
[ -f job ] || exit 0
read -r id < job || exit 0
printf 'job=%s\n' "$id"
out=$(scontrol show job -o "$id" 2>&1)
printf 'scontrol_rc=%s\n%s\n' "$?" "$out"
case $out in
  *"Invalid job id"*) printf 'sacct=%s\n' "$(sacct -j "$id" -n -P -o State,ExitCode,NodeList 2>&1 | head -n 1)";;
esac
exit 0
"""


def parse_record(line: str) -> dict[str, str]:
    """One ``scontrol show job -o`` line as a dict; a value runs up to the next `` Key=``
    (values may hold spaces: ``Command``, ``WorkDir``)."""
    keys = list(_KEY.finditer(line))
    return {m.group(1): line[m.end():(keys[i + 1].start() if i + 1 < len(keys) else len(line))].strip()
            for i, m in enumerate(keys)}


def job_state(record: dict, *, job: str = "", stopped: bool = False) -> ServiceState:
    """A job's record (``JobState``, ``Reason``, ``ExitCode``, ``BatchHost``/``NodeList``,
    from scontrol or sacct) in systemd's words (see the module docstring). ``stopped``:
    ddlab cancelled it, so a CANCELLED is a clean stop."""
    state = (record.get("JobState") or "").split(" ")[0]  # sacct: "CANCELLED by 0"
    node = record.get("BatchHost") or record.get("NodeList") or ""
    common = {"invocation_id": job, "scheduler_state": state, "node": "" if node in _NO_NODE else node,
              "scheduler_reason": "" if record.get("Reason") in ("None", None) else record["Reason"]}
    code, _, signal = (record.get("ExitCode") or "").partition(":")
    killed = signal.isdigit() and int(signal) > 0
    status = int(signal) if killed else int(code) if code.isdigit() else None
    ended = {"exit_status": status, "exit_kind": None if status is None else
             ("killed" if killed else "exited")}
    if state in _PENDING:
        return ServiceState("activating", state.lower(), **common)
    if state in ("RUNNING", "SIGNALING"):
        return ServiceState("active", "running", **common)
    if state in ("SUSPENDED", "STOPPED"):
        return ServiceState("active", "suspended", **common)
    if state in ("COMPLETING", "STAGE_OUT"):
        return ServiceState("deactivating", "completing", **common)
    if state == "COMPLETED" or (state == "CANCELLED" and stopped):
        return ServiceState("inactive", "dead", "success", **ended, **common)
    if state in SCHEDULER_ENDED:
        return ServiceState("failed", "failed", "scheduler-ended", **ended, **common)
    if state in ("FAILED", "SPECIAL_EXIT"):
        return ServiceState("failed", "failed", "signal" if killed else "exit-code", **ended, **common)
    if not state:  # neither scontrol nor sacct knows it any more
        return ServiceState("inactive", "dead", "unknown", **{**common, "scheduler_reason":
                            f"Slurm no longer knows job {job} (and sacct has no record)"})
    return ServiceState("activating", state.lower(), **common)


def batch_script(spec: ServiceSpec, workdir: str) -> str:
    """The job's bash script: who and where first in the log, the environment exported,
    the workdir, then ``exec`` of the argv; every value quoted with :func:`shlex.quote`."""
    lines = ["#!/bin/bash", f"# ddlab: the batch job of {spec.unit} (written by ddlab; "
             "submitted with sbatch, which copies it)",
             'echo "ddlab: job ${SLURM_JOB_ID:-?} starts on $(hostname -s)"']
    lines += [f"export {key}={shlex.quote(str(value))}" for key, value in spec.env.items()]
    lines += [f"cd -- {shlex.quote(workdir)} || exit 111", f"exec {shlex.join(spec.argv)}", ""]
    return "\n".join(lines)


class SlurmManager(ServiceManager):
    """Services as Slurm batch jobs submitted on the login host (see the module docstring)."""

    stop_timeout_s = 180.0      # scancel's TERM, the cluster's KillWait, then KILL and epilog
    controller_grace_s = 30.0   # how long a silent slurmctld is waited out by state()
    query_interval_s = 1.0      # the controller is asked at most this often per job

    def __init__(self, transport: Transport, profile: HostProfile | None = None):
        super().__init__(transport)
        self.profile = p = profile or transport.profile
        self.log_dir = (p.log_dir or f"{p.state_dir.rstrip('/')}/jobs").rstrip("/")
        if p.log_dir and p.max_jobs > 1:  # a pool's slots share log_dir: a folder each
            self.log_dir += f"/slot-{p.slot}"
        self._root: str | None = None
        self._last: dict[str, tuple[float, ServiceState]] = {}  # name -> (when, last state)

    def _dir(self, name: str) -> str:
        if self._root is None:
            self._root = self.transport.expand_path(self.log_dir)
        return f"{self._root}/{unit_name(name)[:-len('.service')]}"

    def job_name(self, name: str) -> str:
        stem = unit_name(name)[:-len(".service")]
        return stem if stem.startswith("ddlab") else f"ddlab-{stem}"

    def sbatch_argv(self, name: str) -> list[str]:
        """The ``sbatch`` command of one start (its options from the profile)."""
        folder, p = self._dir(name), self.profile
        argv = ["sbatch", "--parsable", f"--job-name={self.job_name(name)}",
                f"--output={folder}/slurm-%j.out", f"--chdir={folder}"]
        for option, value in (("partition", p.partition), ("account", p.account),
                              ("gres", p.gres), ("time", p.time_limit)):
            if value:
                argv.append(f"--{option}={value}")
        return [*argv, *p.sbatch_options, f"{folder}/job.sh"]

    # -- install / start / stop ------------------------------------------------------

    def install(self, spec: ServiceSpec) -> None:
        folder = self._dir(spec.name)
        workdir = self.transport.expand_path(spec.workdir or "~")
        self.transport.make_private_dir(folder)
        data = {"argv": list(spec.argv), "env": dict(spec.env), "workdir": spec.workdir}
        self.transport.write_file(f"{folder}/spec.json", json.dumps(data).encode(), mode=0o600)
        self.transport.write_file(f"{folder}/job.sh", batch_script(spec, workdir).encode(), mode=0o600)

    def start(self, name: str) -> str:
        """Submit the job; its id (the invocation id) is recorded on the host by the
        same command, so a restore finds it whatever happens next."""
        state = self.state(name)
        if state.load_state == "not-found":
            raise ServiceError(f"{name}: not installed in {self._dir(name)}", fix="install(spec) first")
        if state.scheduler_state in LIVE_STATES:
            raise ServiceError(f"{name}: job {state.invocation_id} is {state.scheduler_state} already",
                               fix="stop it first")
        done = self.transport.run(["sh", "-c", _SUBMIT, "ddlab-submit", self._dir(name),
                                   *self.sbatch_argv(name)])
        job = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        if not _JOB_ID.fullmatch(job):
            raise ServiceError(f"{name}: sbatch answered {done.stdout.strip()[:200]!r}, not a job id",
                               fix=f"run it by hand on the login host: {shlex.join(self.sbatch_argv(name))}")
        self._last.pop(name, None)
        log.info(f"{self.profile.name}: submitted job {job} ({self.job_name(name)})")
        return job

    def stop(self, name: str) -> None:
        """``scancel`` the job, then wait until it no longer pends, runs or completes."""
        state = self.state(name)
        if state.scheduler_state not in LIVE_STATES:
            return
        job = self._job_id(state.invocation_id)
        self.transport.run(["touch", "--", f"{self._dir(name)}/stopped"])
        self.transport.run(["scancel", job])
        self._last.pop(name, None)
        beat, started = None, time.monotonic()
        while (state := self.state(name)).scheduler_state in LIVE_STATES:
            waited = time.monotonic() - started
            if waited > self.stop_timeout_s:
                raise ServiceError(f"{name}: job {job} still {state.scheduler_state} "
                                   f"{waited:.0f} s after scancel",
                                   fix=f"look at it on the login host: scontrol show job {job}; "
                                       f"scancel --signal=KILL {job}", service=name)
            if beat is None and waited > 3:
                beat = Heartbeat(f"scancel job {job}", self.stop_timeout_s, interval_s=5)
            if beat is not None:
                beat.beat(f"waiting for job {job} to end: {state.scheduler_state}"
                          + (f" on {state.node}" if state.node else ""))
            time.sleep(0.2)
        if beat is not None:
            beat.close(f"job {job} ended: {state.scheduler_state}")

    def remove(self, name: str) -> None:
        self.stop(name)
        self.transport.run(["rm", "-rf", "--", self._dir(name)])
        self._last.pop(name, None)

    def definition_path(self, name: str) -> str | None:
        state = self.state(name)
        return None if state.load_state == "not-found" else f"{self._dir(name)}/spec.json"

    # -- state and logs --------------------------------------------------------------

    def state(self, name: str) -> ServiceState:
        """One command: the job file, then scontrol (sacct when scontrol forgot the job);
        within ``query_interval_s`` of the last answer, that answer."""
        when, last = self._last.get(name, (None, None))
        if when is not None and time.monotonic() - when < self.query_interval_s:
            return last
        files, record, errors = self._query(name)
        if "installed" not in files:
            return ServiceState("inactive", "dead", load_state="not-found")
        job = files.get("job", "")
        if not job:
            return ServiceState("inactive", "dead")
        if record is None and files.get("sacct", "").count("|") >= 1:
            values = files["sacct"].split("|")
            record = dict(zip(("JobState", "ExitCode", "NodeList"), values))
        elif record is None and files.get("scontrol_rc", "0") != "0" and "sacct" not in files:
            return self._controller_silent(name, job, errors)
        state = job_state(record or {}, job=job, stopped="stopped" in files)
        if state.scheduler_state in LIVE_STATES:  # an ended job's state is final: asked again
            self._last[name] = (time.monotonic(), state)  # only to see a restart
        else:
            self._last.pop(name, None)
        return state

    def _query(self, name: str) -> tuple[dict, dict | None, str]:
        done = self.transport.run(["sh", "-c", _STATE, "ddlab-job-state", self._dir(name)])
        files, record, errors = {}, None, []
        for line in done.stdout.splitlines():
            if line.startswith("JobId="):
                record = record or parse_record(line)
            elif re.match(r"(installed|stopped|job|scontrol_rc|sacct)=", line):
                key, _, value = line.partition("=")
                files[key] = value
            elif line.strip():
                errors.append(line.strip())
        return files, record, "; ".join(errors)

    def _controller_silent(self, name: str, job: str, errors: str) -> ServiceState:
        """scontrol failed for another reason than an unknown job (the controller is down,
        slow, or the login host cannot reach it): the last state stands for a while."""
        when, last = self._last.get(name, (None, None))
        if when is not None and time.monotonic() - when < self.controller_grace_s:
            log.debug(f"{self.profile.name}: scontrol for job {job}: {errors}; last state stands")
            return last
        raise HostError(f"{self.profile.label}: Slurm does not answer for job {job}: {errors[:300]}",
                        fix="check the controller from the login host (scontrol ping); the job "
                            "may still run", host=self.profile.name, transient=True)

    def read_logs(self, name, *, invocation=None, cursor=None):
        job = invocation or self._query(name)[0].get("job")
        if not job:
            return "", cursor
        job = self._job_id(job)
        path = f"{self._dir(name)}/slurm-{job}.out"
        offset = int(cursor.rsplit(":", 1)[1]) if cursor and cursor.startswith(f"{job}:") else 0
        text, offset = read_log_file(self, path, offset)  # bytes read, bounded, no link followed
        return text, f"{job}:{offset}"

    @staticmethod
    def _job_id(job: str) -> str:
        if not _JOB_ID.fullmatch(str(job)):
            raise ConfigError(f"job id {job!r}: must be digits (a Slurm job id)",
                              fix="use the id start() returned", value=job)
        return str(job)
