"""Watch a deployed variant until it is ready, crashed or timed out.

The loop polls the service's state over the host's open connection every
``poll_s`` (0.2 s: a death is seen well within a second), follows its log
(this start's only; once a second, and at each poll while the server answers but
the log has not said ready yet) for the startup phase, and shows a heartbeat every
``heartbeat_s`` with elapsed time, phase and the last log line. A background
thread asks ``/health`` (then ``/v1/models``) every 0.25 s, from the moment the
server's address is known, whether the server answers.

- *ready*: the service runs AND the server answers. "Ready" is not "works":
  with ``probe=True`` it then sends requests that drive the speculative
  verify path (one alone, then two at once) and keeps watching for
  ``grace_s``; in the field the replay crash only happens then. Probes lost
  with a dropped SSH connection are sent again (twice at most).
- *crashed*: the unit failed, the process is gone, or systemd restarted it
  since ddlab started it (``NRestarts``: a crash loop under ``Restart=always``
  is never "ready"; the verdict says how many restarts).
- *wrong_output*: ready, the probes served, but the greedy tokens differ from
  the model's own without speculation (:mod:`ddlab.lab.lossless`): fast and
  wrong. A variant without speculation records that reference when there is
  none; a speculative one with no reference says so in its notes.
- *timeout*: ``timeout_s`` passed; the log tail says where it hung.
- *scheduler_ended*: the scheduler ended the server's job (Slurm's TIMEOUT,
  PREEMPTED, NODE_FAIL, OUT_OF_MEMORY, CANCELLED by someone else ...): its own
  outcome, never a crash; the kind is ``slurm_<state>`` (``slurm_timeout`` ...),
  the cause names the job, node, state and the profile's time limit.
- *preempted*: another ddlab run took the host (``--force``) and, as a rule, stopped
  this server: never a crash. Seen between polls (the lock's heartbeat thread found
  the lock taken), or when the server dies: a death while the lock names another run
  (or the taker's record names this one) is that run's doing. The cause names the
  taker (user, machine, pid, its command, its project folder) and when.
- *interrupted*: Ctrl-C; recorded, then :class:`ddlab.core.errors.Interrupted`
  (a KeyboardInterrupt carrying the verdict) is raised so the caller restores.

The server's family (the run folder's ``config.json``, :mod:`ddlab.config.families`)
says how: its log dialect for the phase and the diagnosis (vLLM's "Application startup
complete." is its ready line), its ``server_info`` paths (vLLM has none), its requests
for the probes and the lossless check (:mod:`ddlab.lab.family_api`), its CUDA-graph
switch and its knobs in the advice.

Whatever the end, the diagnosis of this start's log (:mod:`ddlab.diagnosis.diagnosis`)
and the verdict are written to the run folder (``journal.log``,
``verdict.json``) before :func:`watch` returns or raises. The diagnosis reads
the raw log (masking first would destroy evidence); what the verdict quotes and
what is written (the log, the cause, the evidence) is masked
(:mod:`ddlab.core.redact`).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import threading
import time
from pathlib import Path

import httpx

from ddlab.core.errors import HostError, HostKeyError, Interrupted, ServiceError
from ddlab.core.interrupts import as_interrupt
from ddlab.core.progress import Heartbeat
from ddlab.core.redact import redact, redact_text
from ddlab.core.run_folders import write_json, write_text
from ddlab.diagnosis import diagnosis as dx
from ddlab.diagnosis.logtext import READY_MARK
from ddlab.diagnosis.probe_advice import skip_path_probe
from ddlab.diagnosis.vllm_log import vllm_lines, vllm_phase_reached
from ddlab.hosts.services import ServiceState
from ddlab.lab import http_client
from ddlab.lab import lossless as ll
from ddlab.lab.attempts import tried_before
from ddlab.lab.deploy import NO_BASELINE_SLURM, Deployed, Lab
from ddlab.lab.family_api import family_of_run, graphs_on_flags
from ddlab.lab.preempted import preempted
from ddlab.lab.verify_requests import ProbeResult, probe_server
from ddlab.lab.slurm_verdict import scheduler_ended
from ddlab.probes import none_fields, probe_records
from ddlab.lab.verdict import (EXIT_CODES, PHASE_LABELS, PREEMPTED_EXIT,  # noqa: F401
                               PROBE_FAILED_EXIT, SCHEDULER_ENDED_EXIT, Verdict)

__all__ = ["Verdict", "watch", "PHASE_LABELS", "EXIT_CODES",
           "PROBE_FAILED_EXIT", "SCHEDULER_ENDED_EXIT", "PREEMPTED_EXIT"]


class _ReadyChecker(threading.Thread):
    """Asks the server, off the main loop, whether it answers (a slow HTTP call
    must not delay seeing a crash), and whether what answers is the variant: its
    ``/server_info`` (``/get_server_info`` before 0.5) names the port it was started
    with. ``identified`` is None when the server tells nothing of itself, False
    when it names another port (``stranger`` says which): never ready then. The
    loop also wants the variant's own log to say it is ready. ``base_url`` is
    None until the loop sets it (once the service runs: a Slurm job's node is
    known only then)."""

    def __init__(self, base_url: str | None, port: int, interval_s: float = 0.25, headers=None):
        super().__init__(daemon=True, name="ddlab-ready-check")
        self.base_url = base_url
        self.headers = dict(headers or {})
        self.port = port
        self.interval_s = interval_s
        self.ready = threading.Event()
        self.stopped = threading.Event()
        self._url_known = threading.Event()
        self.model = None
        self.identified: bool | None = None
        self.stranger = ""
        self.info: dict = {}
        self.health, self.info_paths = "/health", ("/server_info", "/get_server_info")

    def run(self) -> None:
        with http_client.client(timeout=2.0, headers=self.headers) as client:
            while not self.stopped.is_set() and not self.ready.is_set():
                if self.base_url is None:  # asks at once when it is given
                    self._url_known.wait(self.interval_s)
                    continue
                self._check(client)
                self.stopped.wait(self.interval_s)

    def ask(self, base_url: str) -> None:
        """Where the server answers, once known."""
        self.base_url = base_url
        self._url_known.set()

    def _check(self, client: httpx.Client) -> None:
        """/health 200 is ready and 503 is starting (SGLang's meaning); a server
        without /health is ready once /v1/models lists a model."""
        try:
            health = client.get(f"{self.base_url}{self.health}").status_code
            if health == 503:
                return
            resp = client.get(f"{self.base_url}/v1/models")
            data = resp.json().get("data") if resp.status_code == 200 else None
            if data:
                self.model = data[0].get("id")
            if health == 200 or data:
                self.identified = self._identify(client)
                if self.identified is not False:
                    self.ready.set()
        except (httpx.HTTPError, ValueError):
            pass

    def _identify(self, client: httpx.Client) -> bool | None:
        for path in self.info_paths:
            resp = client.get(f"{self.base_url}{path}")
            info = resp.json() if resp.status_code == 200 else None
            if isinstance(info, dict) and "port" in info:
                if int(info["port"]) == self.port:
                    self.info = info
                    return True
                self.stranger = (f"{path} answers port {info['port']} "
                                 f"({info.get('model_path') or info.get('version') or '?'})")
                return False
        return None


class _Follower:
    """This start's log, fetched incrementally; its phase (read again only when the log
    grew, and no more once it can no longer change: serving after the ready line, the last
    phase of a start) and last line for the heartbeat. Reading the phase is a pass over the
    whole text: read again at every poll, a server that serves on for minutes would cost a
    core (2.7 s of CPU a poll on a 2.5 MB log, 2026-12-05)."""

    def __init__(self, lab: Lab, deployed: Deployed, dialect: str = "sglang"):
        self.lab, self.deployed, self.dialect = lab, deployed, dialect
        self.text, self.cursor = "", None
        self.phase = _phase_of("", dialect)

    def poll(self) -> None:
        more, self.cursor = self.lab.manager.read_logs(
            self.deployed.service, invocation=self.deployed.invocation or None, cursor=self.cursor)
        if more:
            settled = self._settled  # of the text the phase was read from
            self.text += more
            if not settled:
                self.phase = _phase_of(self.text, self.dialect)

    @property
    def _settled(self) -> bool:
        """The phase is final: serving, past the ready line (SGLang's phase goes back from
        serving to ready only where that line comes after batch lines: the warmup's)."""
        return self.phase == "serving" and (self.dialect == "vllm"
                                            or READY_MARK.search(self.text) is not None)

    @property
    def says_ready(self) -> bool:
        return self.phase in ("ready", "serving")

    def settle(self, budget_s: float = 0.8) -> str:
        """Read until the log stops growing (a dying process's last lines can lag)."""
        deadline = time.monotonic() + budget_s
        while True:
            before = len(self.text)
            self.poll()
            if (len(self.text) == before and before) or time.monotonic() > deadline:
                return self.text
            time.sleep(0.1)

    @property
    def status(self) -> str:
        phase = PHASE_LABELS.get(self.phase, "launching")
        lines = [dx.strip_prefix(l) for l in self.text.strip().splitlines()[-1:]]
        # masked before it is cut: a secret cut in two is masked by neither half
        last = redact_text(lines[0])[:100] if lines else "(no log yet)"
        return f"{phase} | {last}"


def _phase_of(text: str, dialect: str) -> str:
    """The startup phase the log reached, read in its family's log dialect."""
    if dialect == "vllm":
        return vllm_phase_reached(vllm_lines(text))[0]
    return dx.phase_of(text)


def watch(lab: Lab, *, timeout_s: float = 600.0, probe: bool = False, grace_s: float = 5.0,
          poll_s: float = 0.2, heartbeat_s: float = 5.0, patterns=(), lossless: bool = True,
          lossless_tolerance: float = 1.0, prompts=()) -> Verdict:
    """Watch the variant deployed on ``lab`` (see the module docstring). With ``probe``
    and ``lossless``, the probes end with the lossless check (``prompts`` at
    temperature 0 against the stored reference, ``lossless_tolerance`` the token
    match rate that passes; ``prompts``: empty for the shipped :data:`ll.PROMPTS`)."""
    lossless_tolerance = ll.check_tolerance(lossless_tolerance)
    prompts = ll.check_prompts(prompts)
    deployed = lab.current
    if deployed is None:
        raise ServiceError(f"host {lab.name!r}: no ddlab variant is deployed there",
                           fix=f"deploy one first: ddlab deploy --host {lab.name}")
    run_dir = Path(deployed.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    family = family_of_run(run_dir)
    follower = _Follower(lab, deployed, family.log_dialect)
    checker = _ReadyChecker(None, deployed.port)  # its URL once it runs; its API key below
    checker.health, checker.info_paths = family.api.health, tuple(family.api.server_info)
    loop = _Loop(lab, deployed, follower, checker, timeout_s=timeout_s, probe=probe,
                 grace_s=grace_s, poll_s=poll_s)
    loop.lossless_asked = (tuple(prompts), lossless_tolerance) if probe and lossless else None
    beat = Heartbeat(f"watch {deployed.name}", timeout_s, interval_s=heartbeat_s,
                     record=run_dir / "heartbeat.log")
    try:
        # the API key, read from the definition ddlab installed: a command on the host,
        # so a connection lost already here ends in the connection_lost verdict too
        checker.headers = lab.server_headers(deployed)
        checker.start()
        # the loop beats between host commands; one that blocks (a frozen sshd, before
        # the drop is seen) is beaten from a thread once the line is an interval old: the
        # thread looks every half interval, so no silence outlasts 1.5 intervals (at 1.5
        # intervals stale it could reach 2, the bound test_f03 holds, and did, at 10.04 s)
        with as_interrupt(), beat.ticking(lambda: f"{loop.last_status} | waiting for the host to answer",
                                          stale_s=beat.interval_s):
            state = loop.run(beat)
    except HostError as lost:  # the host stopped answering: a verdict of its own, never silence
        if isinstance(lost, HostKeyError):
            raise
        return _finish(loop, "connection_lost", beat, patterns, lost=str(lost))
    except KeyboardInterrupt as interrupt:
        raise Interrupted(verdict=_finish(loop, "interrupted", beat, patterns)) from interrupt
    finally:
        checker.stopped.set()
    return _finish(loop, state, beat, patterns)


def _deployed(deployed: Deployed) -> tuple[dict, str | None]:
    """The flags the variant was started with and the SGLang release its command was
    checked against (None: unknown), from its run folder's config.json."""
    import json

    try:
        config = json.loads((Path(deployed.run_dir) / "config.json").read_text())
        return dict(config["config"]["flags"]), config.get("sglang_version") or None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}, None


def _run_config(deployed: Deployed) -> dict:
    """The run folder's config.json (host, base, config), {} when unreadable."""
    import json

    try:
        config = json.loads((Path(deployed.run_dir) / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    return config if isinstance(config, dict) else {}


def _module(deployed: Deployed) -> str:
    """The server's module (``ddlab.target``, ``sglang.launch_server``), '' unknown."""
    command = (_run_config(deployed).get("config") or {}).get("command") or {}
    return str(command.get("module") or "") if isinstance(command, dict) else ""


class _Loop:
    def __init__(self, lab, deployed, follower, checker, *, timeout_s, probe, grace_s, poll_s):
        self.lab, self.deployed, self.follower, self.checker = lab, deployed, follower, checker
        self.deployed_flags, self.sglang_version = _deployed(deployed)
        self.family = family_of_run(deployed.run_dir)
        self.timeout_s, self.probe, self.grace_s, self.poll_s = timeout_s, probe, grace_s, poll_s
        self.started = time.monotonic()
        self.state: ServiceState | None = None
        self.probes: list[ProbeResult] = []
        self._probe_thread: threading.Thread | None = None
        self._probe_done_at: float | None = None
        self.lossless_asked: tuple | None = None   # (prompts, tolerance), or None: no check
        self.last_status = "launching"  # what the heartbeat said last (read by its ticker)
        self.lossless: dict = {}
        self._checking = False

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def run(self, beat: Heartbeat) -> str:
        last_log = next_beat = float("-inf")
        while True:
            if self.lab.preemption is not None:  # the lock's heartbeat found it taken
                return "preempted"
            self.state = self.lab.manager.state(self.deployed.service)
            if (self.state.scheduler_ended or self._crashed()) and self.lab.taken() is not None:
                return "preempted"  # stopped by the run that took the host: not a crash
            if self.state.scheduler_ended:
                return "scheduler_ended"
            if self._crashed():
                return "crashed"
            if self.checker.base_url is None and self.state.running:
                self.checker.ask(self.lab.server_url(self.deployed, self.state))
            # the log once a second; at each poll while the server answers but its log
            # has not said ready yet (the last line that ready waits for)
            if time.monotonic() - last_log >= 1.0 or self._awaiting_ready_line():
                self.follower.poll()
                last_log = time.monotonic()
            if self._answering_as_itself() and self._probed():
                return "ready"
            if self.elapsed_s > self.timeout_s:
                return "timeout"
            if time.monotonic() >= next_beat:  # the status reads the whole log: not every poll
                self.last_status = self._status()
                beat.beat(self.last_status, force=True)
                next_beat = time.monotonic() + beat.interval_s
            self._nap()

    def _nap(self) -> None:
        """Until the next poll: ``poll_s``, or less when what ready waits for comes
        sooner (the first answer; the end of the grace period after the probes)."""
        if not self.checker.ready.is_set():
            self.checker.ready.wait(self.poll_s)
            return
        nap_s = self.poll_s
        if self._probe_done_at is not None:
            grace_left_s = self._probe_done_at + self.grace_s - time.monotonic()
            if grace_left_s > 0:  # past it, ready (or a change of state) was seen already
                nap_s = min(nap_s, grace_left_s)
        time.sleep(nap_s)

    def _awaiting_ready_line(self) -> bool:
        return self.checker.ready.is_set() and not self.follower.says_ready

    def _answering_as_itself(self) -> bool:
        """It runs, something answers that does not say it is another server (its
        /server_info names the variant's port, or tells nothing), and the variant's own
        log reached "ready": SGLang logs "The server is fired up and ready to roll!"
        after its warmup, also when the warmup is skipped (sglang/srt/entrypoints/
        http_server.py:2589-2600 in 0.5.23), so an answer alone proves nothing."""
        if not (self.checker.ready.is_set() and self.state.running):
            return False
        return self.follower.says_ready

    def _crashed(self) -> bool:
        s = self.state
        gone = s.active_state in ("inactive", "failed") and s.sub_state in ("dead", "failed")
        return s.failed or gone or s.n_restarts > 0

    def _probed(self) -> bool:
        """True once probes (if asked) are done and the grace period passed alive."""
        if not self.probe:
            return True
        if self._probe_thread is None:
            self._probe_thread = threading.Thread(target=self._run_probes, daemon=True,
                                                  name="ddlab-probe")
            self._probe_thread.start()
            return False
        if self._probe_done_at is None:
            return False
        return time.monotonic() - self._probe_done_at >= self.grace_s

    def _run_probes(self) -> None:
        """Probe; probes lost with a dropped SSH connection (no HTTP status, and the
        connection dropped meanwhile) say nothing of the server: probe again, for as long
        as the transport rides out a drop (``connect_timeout_s`` from the first loss, as
        a host command does), half a second apart. A request the server itself cut (its
        process died under it) leaves the link as it was: a failed probe at once."""
        try:
            window_s = self.lab.profile.connect_timeout_s
            first_loss = None
            while True:
                link = self.lab.transport.link
                self.probes = probe_server(self.lab.server_url(self.deployed),
                                           headers=self.checker.headers, family=self.family,
                                           model=self.checker.model)
                lost = any(not p.ok and p.status is None for p in self.probes)
                if not (lost and self._link_changed(link)):
                    break
                first_loss = first_loss if first_loss is not None else time.monotonic()
                if time.monotonic() - first_loss >= window_s:
                    break
                time.sleep(0.5)  # the reconnect is the next command's or the tunnel's
            if self.lossless_asked and self.probes and all(p.ok for p in self.probes):
                self._checking = True
                self.lossless = self._lossless_check(*self.lossless_asked)
        except Exception as err:  # a probe that could not run is a failed probe, not a pass
            self.probes = [ProbeResult(ok=False, batch=1, error=f"{type(err).__name__}: {err}")]
        finally:
            self._probe_done_at = time.monotonic()

    def _link_changed(self, link: tuple, settle_s: float = 1.0) -> bool:
        """Whether the connection dropped since ``link`` was read. A tunnel's channel can
        close (the request lost) a moment before paramiko marks its transport dead: look
        again for up to ``settle_s`` before calling the request cut by the server. A
        transport with no connection to lose (``local``: an empty link) is not waited on."""
        deadline = time.monotonic() + (settle_s if link else 0.0)
        while self.lab.transport.link == link:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True

    def _lossless_check(self, prompts, tolerance) -> dict:
        """The variant's greedy tokens against the model's own (the stored reference);
        a variant without speculation records the reference when there is none."""
        info = self.checker.info
        model = ll.model_identity(info, self.checker.model)
        started = time.monotonic()
        try:
            outputs = ll.collect(self.lab.server_url(self.deployed), prompts=prompts,
                                 headers=self.checker.headers, family=self.family,
                                 model=self.checker.model)
        except (httpx.HTTPError, ValueError) as err:
            return {"checked": False, "why": f"the check's requests failed: {err}"}
        speculative = ll.speculative(self.deployed_flags, info, self.family)
        reference = ll.load_reference(model, prompts)
        took = round(time.monotonic() - started, 3)
        if reference is None and not speculative:
            reference = ll.Reference(model=model, prompts=list(prompts),
                                     max_new_tokens=ll.MAX_NEW_TOKENS, outputs=outputs,
                                     source=f"{self.deployed.name} on {self.lab.name}")
            path = ll.save_reference(reference)
            return {"checked": False, "recorded": str(path), "took_s": took,
                    "why": f"this variant runs no speculation: its tokens are now the reference "
                           f"{reference.key} for {model}"}
        if reference is None:
            return {"checked": False, "took_s": took,
                    "why": f"no reference for {model} yet: a variant without speculation records "
                           "one: a sweep's no-speculation baseline cell, or a watch of this base "
                           f"with its speculative flags removed ({self.family.baseline_words()})"}
        check = ll.compare(reference, outputs, tolerance=tolerance)
        return {"checked": True, "took_s": took, **check.to_dict()}

    def _status(self) -> str:
        s = self.state
        text = f"{self.follower.status} | {s.active_state}/{s.sub_state}"
        if self._probe_thread is not None:
            text += (" | probed, grace period" if self._probe_done_at is not None else
                     " | lossless check" if self._checking else " | probing")
        if self.checker.stranger:
            text += f" | NOT the variant answering: {self.checker.stranger}"
        return text


# systemd's own reasons for a start that never ran the server (exit statuses 200-243,
# systemd.exec(5)): a wrong interpreter path is 203/EXEC, a missing folder 200/CHDIR.
_SPAWN = re.compile(r"(Failed to (?:execute|locate executable|spawn)[^\n]*|Failed at step \w+ "
                    r"spawning[^\n]*|status=2[0-4]\d/[A-Z_]+)")


def _spawn_failure(diagnosis: dx.Diagnosis, text: str) -> dx.Diagnosis | None:
    """When systemd itself could not start the server, its reason is the cause."""
    lines = [dx.strip_prefix(l) for l in text.strip().splitlines() if l.strip()]
    spawn = [m.group(1) for line in lines if (m := _SPAWN.search(line))]
    if not spawn or diagnosis.kind not in (None, "unknown"):
        return None
    reason = next((r for r in spawn if not r.startswith("status=")), spawn[0])
    return dataclasses.replace(
        diagnosis, crashed=True, kind="unknown", phase="launch",
        cause=f"systemd could not start the server: {reason}",
        evidence=[line for line in lines if _SPAWN.search(line)][-5:],
        suggestion="fix what systemd names (the interpreter path, the working directory, "
                   "the user) in the base or the host profile, then deploy again")


def _unexplained_death(diagnosis: dx.Diagnosis, s: ServiceState, text: str) -> dx.Diagnosis:
    """The service died but its log shows no known failure: say what is known."""
    how = (f"killed by signal {s.exit_status}" if s.exit_kind == "killed"
           else f"exited with status {s.exit_status}" if s.exit_status is not None
           else f"{s.active_state}/{s.sub_state} ({s.result})")
    lines = [dx.strip_prefix(l) for l in text.strip().splitlines() if l.strip()]
    last = lines[-1] if lines else "the log is empty"
    return dataclasses.replace(
        diagnosis, crashed=True, kind="unknown", cause=f"the process {how}; last log line: {last}",
        evidence=diagnosis.evidence or lines[-10:], exit_status=diagnosis.exit_status or how,
        suggestion="no known crash signature: read journal.log; run the command by hand to see it fail")


def _notes(loop: _Loop, diagnosis: dx.Diagnosis) -> list[str]:
    """What a reader of a READY verdict must know besides: production's state, and a
    server that took less than it was given (SGLang cuts max_running_requests to fit)."""
    notes = []
    baseline = (loop.lab.lock.baseline or {}).get("service") if loop.lab.lock else None
    if baseline and loop.lab.lock.baseline.get("was_active"):
        notes.append(f"the baseline {baseline} is stopped while the variant runs: ddlab restore "
                     f"--host {shlex.quote(loop.lab.profile.handle)} puts it back")
    ran = diagnosis.decode.get("cuda_graph") if isinstance(diagnosis.decode, dict) else None
    if graphs_on_flags(loop.deployed_flags, loop.family) and ran is False:
        notes.append("CUDA graphs were asked for, but every decode line says cuda graph: False: "
                     "the batch did not fit the captured graphs (its width or size), so these "
                     "figures are eager ones")
    for flag, cut in ran_otherwise(loop.deployed_flags, diagnosis).items():
        asked = "asked for" if cut["given"] else "SGLang defaults to"
        notes.append(f"the server runs {flag.replace('-', '_')}={cut['ran']}, not the "
                     f"{cut['asked']} {asked}: it cut it to fit memory; the variant is not what "
                     "was configured")
    return notes


def ran_otherwise(flags: dict, diagnosis: dx.Diagnosis) -> dict:
    """Values the server ran otherwise than configured, by the log's own figures: flag ->
    ``{"asked", "ran", "given"}`` (``given``: set by the config, not SGLang's default).
    Today max_running_requests, which SGLang cuts to fit the KV pool (48 under
    speculation when not given)."""
    served = diagnosis.facts.get("max_running_requests")
    given = flags.get("max-running-requests")
    asked = given or (48 if ll.speculative(flags) else None)  # SGLang's default
    asked = int(asked) if isinstance(asked, str) and asked.isdigit() else asked
    if isinstance(served, int) and isinstance(asked, int) and served < asked:
        return {"max-running-requests": {"asked": asked, "ran": served, "given": bool(given)}}
    return {}


def _not_lossless(diagnosis: dx.Diagnosis, loop: _Loop, text: str) -> dx.Diagnosis:
    """A ready variant whose tokens differ from the model's own: what differs, and the
    next step (graphs are the usual suspect: SGLang 0.5.23's fill_from skips a None
    field and replays stale buffers, sglang/srt/model_executor/cuda_graph_buffer_registry.py)."""
    check = loop.lossless
    graphs = graphs_on_flags(loop.deployed_flags, loop.family)
    nones = none_fields(probe_records(text), events=("call",))  # a first=N probe's calls
    depth = next(iter(loop.family.knobs), "budget")
    if loop.family.name != "sglang":  # no DDTree, no --probe-fn of the SGLang target
        step = ("deploy the same variant with CUDA graphs off (--set cuda_graph=false): if its "
                "tokens are right, the graphs replay stale buffers" if graphs else
                f"graphs are off, so the verify path itself is wrong: sweep {depth} down to "
                "the smallest that still differs")
    elif graphs and nones:
        step = (f"{', '.join(nones)} is None in the verify batch the graph copies: the replay "
                "runs on that field's stale buffer; fix what drops it, or run with CUDA graphs "
                "off (--set cuda_graph=false) meanwhile")
    elif graphs:
        flags = loop.deployed_flags  # the target's --log-format picks its generation
        target = skip_path_probe(_module(loop.deployed), flags.get("log-format")
                                 or diagnosis.sglang_version)
        step = ("deploy the same variant with CUDA graphs off (--set cuda_graph=false): if its "
                "tokens are right, the graph replays buffers a verify field never filled; to see "
                f"which field is None, deploy it again with `ddlab deploy --probe-fn {target} ...`"
                " (the copy skips a None field without raising, so only a first=N probe sees it)")
    else:
        step = ("graphs are off, so the verify path itself is wrong: sweep budget and topk_cap "
                "down to the smallest tree that still differs, and compare with DFLASH")
    cause = check.get("summary", "the tokens differ from the reference")
    if nones:  # what the probe saw is the first thing the cause says
        cause = f"{', '.join(nones)} {'is' if len(nones) == 1 else 'are'} None (DDLAB_PROBE): {cause}"
    return dataclasses.replace(
        diagnosis, kind="lossless_violation", phase="serving", crashed=False,
        facts={**diagnosis.facts, "none_fields": nones} if nones else diagnosis.facts,
        cause=cause,
        evidence=[f"compared {check.get('compared')}",
                  f"reference from {check.get('reference_source')}"], suggestion=step)


def _masked(diagnosis: dx.Diagnosis) -> dx.Diagnosis:
    """The diagnosis as it may be written and shown: every quoted text masked."""
    return dataclasses.replace(
        diagnosis, cause=redact_text(diagnosis.cause) if diagnosis.cause else diagnosis.cause,
        evidence=[redact_text(line) for line in diagnosis.evidence],
        suggestion=redact_text(diagnosis.suggestion) if diagnosis.suggestion else None,
        facts=redact(diagnosis.facts))


def _finish(loop: _Loop, state: str, beat: Heartbeat, patterns, *, lost: str = "") -> Verdict:
    """Diagnose this start's log and write the evidence, before anything returns or raises
    (with the connection lost, from what was read before)."""
    if state in ("crashed", "scheduler_ended", "preempted"):
        text = loop.follower.settle()
    elif state != "connection_lost":
        loop.follower.poll()
        text = loop.follower.text
    else:
        text = loop.follower.text
    s = loop.state
    # the raw log (masking destroys evidence); advice for the release and algorithm in use
    family = loop.family
    algorithm = family.flat_flags(loop.deployed_flags).get(family.algorithm_key)
    how = {"patterns": patterns, "version": loop.sglang_version, "host": loop.lab.profile.handle,
           "algorithm": str(algorithm) if algorithm else None,
           **({"family": family.log_dialect} if family.name != "sglang" else {})}
    diagnosis = dx.diagnose(text, **how)
    tried = tried_before(loop.lab.name, str(_run_config(loop.deployed).get("base") or ""),
                         diagnosis.kind or "", exclude=loop.deployed.run_dir) \
        if diagnosis.crashed else {}
    if tried:  # earlier starts that crashed the same way: the advice moves to the next lever
        diagnosis = dx.diagnose(text, tried=tried, **how)
    if state == "preempted":
        diagnosis = preempted(diagnosis, loop.lab.preemption, loop.lab.name, s)
    elif state == "scheduler_ended":
        diagnosis = scheduler_ended(diagnosis, s, text, loop.lab.profile.time_limit)
    elif state == "crashed" and (spawned := _spawn_failure(diagnosis, text)):
        diagnosis = spawned
    elif state == "crashed" and not diagnosis.crashed:
        diagnosis = _unexplained_death(diagnosis, s, text)
    # what is kept and shown is masked: a server logs its own secrets (server_args=...api_key=)
    if state == "ready" and loop.lossless.get("checked") and not loop.lossless.get("ok"):
        state, diagnosis = "wrong_output", _not_lossless(diagnosis, loop, text)
    diagnosis = _masked(diagnosis)
    text = redact_text(text)
    restarts = s.n_restarts if s else 0  # since the start ddlab made (a manual start resets it)
    notes = (_notes(loop, diagnosis) if state == "ready" else
             [f"not the variant answered on its port: {loop.checker.stranger}"]
             if loop.checker.stranger else [])
    if loop.lab.profile.scheduler == "slurm":
        notes.append(NO_BASELINE_SLURM)
    notes += diagnosis.facts.get("probes_not_armed") or []  # a typo'd --probe-fn saw nothing
    verdict = Verdict(state=state, variant=loop.deployed.name, host=loop.lab.name,
                      service=loop.deployed.service, elapsed_s=loop.elapsed_s, diagnosis=diagnosis,
                      service_state=s.to_dict() if s else {}, restarts=restarts,
                      probes=list(loop.probes), log_tail=text.strip().splitlines()[-30:],
                      run_dir=str(loop.deployed.run_dir), lost=redact_text(lost),
                      lossless=redact(loop.lossless), notes=notes,
                      ran_otherwise=ran_otherwise(loop.deployed_flags, diagnosis)
                      if state == "ready" else {})
    run_dir = Path(loop.deployed.run_dir)
    write_text(run_dir / "journal.log", text)
    write_json(run_dir / "verdict.json", verdict.to_dict())
    beat.close(verdict.headline)
    return verdict
