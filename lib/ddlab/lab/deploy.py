"""Deploy a config variant on a host, and always put the baseline back.

:class:`Lab` is one ddlab job's hold on one host: the transport (one
persistent connection), the service manager the profile names, and the host
lock (:mod:`ddlab.hosts.lock`), whose file also records what ddlab changed there.
Deploying stops the host's baseline service (the production server, if the
profile names one) and starts the variant; :meth:`Lab.restore` stops the
variant, starts the baseline again if it was active, waits until it is, and
releases the lock. On a Slurm host (``scheduler: slurm``) the variant is a
batch job (:mod:`ddlab.hosts.slurm`): there is no baseline (jobs are
ephemeral), stopping it is ``scancel``, and :meth:`Lab.server_url` reaches the
server on the job's node through the login host.

:func:`deployed` is the guarantee as a context manager: the baseline comes back
on success, crash, timeout, exception and KeyboardInterrupt; a second Ctrl-C
during the restore is held until the restore is done. The CLI spreads the
same steps over ``ddlab deploy`` / ``watch`` / ``restore``, which find each
other through the lock file.

A run whose host another ddlab run took (``--force``) is *preempted*, never
crashed: every change :class:`Lab` makes to the host first checks that the lock
is still its own (:meth:`ddlab.hosts.lock.LockFile.check`) and raises
:class:`ddlab.core.errors.Preempted` naming the taker; the lock's heartbeat
thread finds out between changes; :meth:`Lab.restore` and :meth:`Lab.close` then
leave the host alone (its new holder puts back, or keeps, what it took over).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ddlab.config.units import exec_words, render_unit
from ddlab.config.variants import Variant, on_host
from ddlab.core.errors import ConfigError, DdlabError, Preempted, ServiceError, StateFileError
from ddlab.core.interrupts import held_interrupts
from ddlab.core.log import get_logger
from ddlab.core.paths import outputs_dir
from ddlab.core.progress import Heartbeat
from ddlab.core.redact import redact_text, remember_secret
from ddlab.core.run_folders import new_run_dir, write_json, write_text
from ddlab.hosts import connect, manager_for
from ddlab.hosts.installs import Installs, digest
from ddlab.hosts.lock import HostLock, LockFile, Preemption
from ddlab.hosts.profiles import HostProfile, load_host
from ddlab.hosts.services import ServiceSpec, ServiceState, unit_name
from ddlab.lab.commands import check_command, sglang_version_on
from ddlab.lab.plans import as_host_runs, probe_folder, probes_environment
from ddlab.probes import probe_files

__all__ = ["Lab", "Deployed", "PortTaken", "deployed", "add_restore_hint",
           "NO_BASELINE_SLURM"]

log = get_logger(__name__)

DEFAULT_PORT = 30000  # SGLang's
NO_BASELINE_SLURM = "no baseline: Slurm jobs are ephemeral"


class PortTaken(ServiceError):
    """The variant's port was taken before it started (``port``, ``holder``)."""


@dataclass(frozen=True)
class Deployed:
    """The variant running on a host now, as the lock file records it."""

    name: str
    hash: str
    service: str
    port: int
    run_dir: Path
    invocation: str = ""
    host: str = ""  # what --host takes to reach it again (HostProfile.handle)

    @classmethod
    def from_record(cls, record: dict) -> "Deployed":
        """The record of a host's ``lock.json``, checked: the host is no authority on this
        controller's files, so a run folder outside this controller's outputs is not
        used (a fresh one is); the service must be a unit name."""
        try:
            service, port = unit_name(str(record["service"])), int(record["port"])
            name, digest = str(record["name"]), str(record["hash"])
        except (KeyError, TypeError, ValueError, ConfigError) as err:
            raise ServiceError(f"the host's lock.json records a variant ddlab cannot read ({err})",
                               fix="look at the lock file on the host; `ddlab restore --force` "
                                   "takes it over") from None
        run_dir = Path(str(record.get("run_dir") or "")).expanduser()
        if not _inside(run_dir, outputs_dir()):
            log.warning(f"the host's lock.json names the run folder {run_dir}, outside this "
                        f"controller's outputs ({outputs_dir()}): using a new one")
            run_dir = new_run_dir(f"{name}-from-lock")
        return cls(name=name, hash=digest, service=service, port=port, run_dir=run_dir,
                   invocation=str(record.get("invocation", "")), host=str(record.get("host", "")))

    exit_code = 0

    def render(self) -> str:
        """What runs where, then the next command (``ddlab deploy`` prints it)."""
        host = shlex.quote(self.host or "local")
        return (f"deployed {self.name} as {self.service} (invocation {self.invocation or '-'}); "
                f"evidence in {self.run_dir}\n"
                f"next: ddlab watch --host {host} --probe   (ddlab restore --host {host} "
                "puts the baseline back)")

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython's text/plain
        printer.text(f"DEPLOYED: {self.name} as {self.service} (port {self.port}); "
                     f"evidence in {self.run_dir}")

    def to_record(self) -> dict:
        return {"name": self.name, "hash": self.hash, "service": self.service, "port": self.port,
                "run_dir": str(self.run_dir), "invocation": self.invocation, "host": self.host}


class Lab:
    """An open host for one ddlab job; use as a context manager (see module docstring).

    While the job runs, the lock names its process, so no other ddlab run
    (not even the same user's) can take the host. ``persistent``: when the job
    ends with something still deployed, the lock outlives the process (no pid:
    held until ``ddlab restore``), for the user's next ddlab run to continue.
    ``wait_s``: queue behind another run holding the host, up to that many seconds;
    ``adopt``: continue what this user's ``ddlab deploy`` left from another checkout too.
    """

    def __init__(self, host: str | HostProfile = "local", *, what: str = "ddlab",
                 persistent: bool = False, force: bool = False, wait_s: float | None = None,
                 adopt: bool = False):
        self.profile = host if isinstance(host, HostProfile) else load_host(host)
        self.what = what
        self.persistent = persistent
        self.force = force
        self.wait_s, self.adopt = wait_s, adopt
        self.transport = None
        self.manager = None
        self.lockfile: LockFile | None = None
        self.installs: Installs | None = None
        self.lock: HostLock | None = None
        self.sglang_versions: dict[str, str] = {}  # variant name -> the release checked against
        self._server_urls: dict[tuple, str] = {}  # (service, invocation) -> URL (a Slurm job's node)
        self._said_ephemeral = False
        self.restored_baseline = ""  # the baseline restore_baseline started again (its name)

    # --- open / close ----------------------------------------------------

    def __enter__(self) -> "Lab":
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self) -> "Lab":
        self.transport = connect(self.profile)
        try:
            self.manager = manager_for(self.transport)
            self.lockfile = LockFile(self.transport, self.profile.state_dir)
            self.installs = Installs(self.transport, self.profile.state_dir)
            self.lock = self.lockfile.acquire(self.what, force=self.force, wait_s=self.wait_s,
                                              adopt=self.adopt)
            self.lockfile.start_beating()
        except BaseException:
            self.transport.close()
            raise
        return self

    def close(self) -> None:
        """Close the connection. The lock is released unless ddlab left something here
        to put back (a variant runs, or the baseline is stopped): then it keeps the
        record, and a ``persistent`` job hands it on (see the class docstring)."""
        if self.transport is None:
            return
        if self.lockfile is not None:
            self.lockfile.stop_beating()
        try:
            if self.transport.down_since is not None and self.lockfile is not None:
                # one more connect would only wait again; the lock there names this
                # process, so it is stale once it ends and the next ddlab run takes it over
                log.warning(f"{self.name}: the host does not answer; its lock "
                            f"{self.lockfile.path} stays until the next ddlab run there")
            elif self.lockfile is not None and self.lockfile.held and self.taken() is not None:
                self.lockfile.forget_preemption()  # the host is the other run's: left alone
                self.lockfile.held = False
            elif self.lockfile is not None and self.lockfile.held:
                if not self.lock.variant and not self.lock.baseline.get("was_active"):
                    self.lockfile.release()
                elif self.persistent:
                    self.lock.holder = dataclasses.replace(self.lock.holder, pid=None)
                    self.lockfile.write(self.lock)
        except DdlabError as err:  # never mask the error that may have brought us here
            log.warning(f"{self.name}: could not release the lock {self.lockfile.path}: {err}")
        finally:
            self.transport.close()

    @property
    def name(self) -> str:
        return self.profile.name

    # --- whose host it is -------------------------------------------------

    def taken(self) -> Preemption | None:
        """None while this job holds the host; else who took it (read from the host)."""
        return self.lockfile.check() if self.lockfile is not None else None

    @property
    def preemption(self) -> Preemption | None:
        """Who took the host, as far as this job has found out (no host command)."""
        return self.lockfile.preemption if self.lockfile is not None else None

    def preempted_error(self, verdict: dict | None = None) -> Preempted:
        """The error for a host taken from this job (``verdict``: how its watch ended)."""
        return self.lockfile.preempted(self.taken(), verdict)

    def check_held(self) -> None:
        """Preempted when another ddlab run took the host: before any change to it."""
        if self.taken() is not None:
            raise self.preempted_error()

    @property
    def current(self) -> Deployed | None:
        return Deployed.from_record(self.lock.variant) if self.lock and self.lock.variant else None

    # --- the server's parser -------------------------------------------

    def check_variants(self, variants) -> None:
        """Each variant's command against the parser of the SGLang this host runs (the
        release the config or the profile names, else the one installed there): a
        ConfigError before anything changes; warnings logged once each."""
        said = set()
        for variant in variants:
            config = self.on_host(variant).config
            version, source = sglang_version_on(config, self.profile, self.transport)
            check = check_command(config, version=version, version_source=source)
            check.raise_errors(variant.name)
            if version:
                self.sglang_versions[variant.name] = version
            for note in check.notes():
                if note not in said:
                    said.add(note)
                    log.info(f"{self.name}: {note}")

    def on_host(self, variant: Variant) -> Variant:
        """The variant as this host runs it: on the embedded target where the host runs
        its family there (:func:`ddlab.lab.plans.as_host_runs`), the profile's
        ``overrides`` on top (a ConfigError naming the profile when one is not a valid
        override)."""
        variant = as_host_runs(variant, self.profile)
        overrides = dict(self.profile.overrides)
        if self.profile.slot:  # a pool's i-th job on a cluster: its own port (hosts/pools.py)
            port = int(variant.config.flags.get("port") or DEFAULT_PORT)
            overrides["port"] = int(overrides.get("port", port)) + self.profile.slot
        try:
            return on_host(variant, overrides)
        except ConfigError as err:
            raise ConfigError(f"host {self.name}: its profile's overrides: {err.message}",
                              fix=f"fix `overrides:` in {self.profile.source or 'its profile'}",
                              value=self.profile.overrides) from None

    def server_url(self, deployed: Deployed, state: ServiceState | None = None) -> str:
        """A URL on this machine that reaches ``deployed``'s server. On a Slurm host the
        server runs on the job's node: through the login host to ``node:port`` (``state``
        saves asking for the node); elsewhere the host's own port (``http_base``)."""
        if self.profile.scheduler != "slurm":
            return self.transport.http_base(deployed.port)
        key = (deployed.service, deployed.invocation)
        if key not in self._server_urls:
            state = state if state is not None and state.node else self.manager.state(deployed.service)
            if not state.node:
                where = state.scheduler_state or "not submitted"
                raise ServiceError(f"{deployed.service} on {self.name}: job "
                                   f"{state.invocation_id or '-'} is {where}, on no node yet: "
                                   "no server to reach",
                                   fix="watch it until it runs: ddlab watch --host "
                                       f"{shlex.quote(self.profile.handle)}",
                                   service=deployed.service)
            self._server_urls[key] = self.transport.http_base(deployed.port, host=state.node)
        return self._server_urls[key]

    def server_headers(self, deployed: Deployed) -> dict:
        """What each HTTP request to ``deployed`` carries: ``Authorization: Bearer KEY``
        when its command sets ``--api-key`` (SGLang then refuses every endpoint but
        health and metrics without it, 0.5.23 sglang/srt/utils/auth.py:138-150). The key
        is read from the definition ddlab installed, never stored, and masked in outputs."""
        key = _api_key_in(self.manager.definition(deployed.service))
        if not key:
            return {}
        remember_secret("api-key", key)
        return {"Authorization": f"Bearer {key}"}

    # --- baseline --------------------------------------------------------

    def stop_baseline(self) -> None:
        """Stop the profile's baseline service, remembering (in the lock) whether it ran.
        A Slurm host has none (its jobs are ephemeral): said once, nothing done."""
        self.installs.read()  # a state file that cannot be read: an error before anything stops
        if self.profile.scheduler == "slurm":
            if not self._said_ephemeral:
                self._said_ephemeral = True
                log.info(f"{self.name}: {NO_BASELINE_SLURM}")
            return
        service = self.profile.baseline_service
        if not service or self.lock.baseline.get("service") == service:
            return  # none, or already stopped by this job (or one we took over)
        state = self.manager.state(service)
        if state.load_state == "not-found":  # a typo would leave production running
            raise ConfigError(f"baseline_service {service!r}: no such service on {self.name}",
                              fix="fix the name in the host profile, or set baseline_service: "
                                  "\"\" if nothing runs there that ddlab must stop",
                              key="baseline_service", value=service)
        was_active = state.active_state in ("active", "activating", "reloading")
        self.lock.baseline = {"service": service, "was_active": was_active,
                              "state_found": f"{state.active_state}/{state.sub_state}",
                              **self._backup(service)}
        self.lockfile.write(self.lock)  # recorded before we touch it
        if was_active:
            log.info(f"{self.name}: stopping baseline {service}")
            self.manager.stop(service)

    def _backup(self, service: str) -> dict:
        """A copy of the baseline's definition in ``<state_dir>/backups/``, before anything
        touches it; what the lock records to put it back verbatim."""
        path = self.manager.definition_path(service)
        text = self.manager.definition(service) if path else None
        if text is None:
            return {}
        folder = f"{self.lockfile.dir.rstrip('/')}/backups"
        copy = f"{folder}/{unit_name(service)}.{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        self.transport.make_private_dir(folder)
        self.transport.write_file(copy, text.encode(), mode=0o600)
        return {"definition": path, "backup": copy, "sha256": digest(text)}

    def _put_back_definition(self, baseline: dict) -> None:
        """The baseline's definition as it was when ddlab found it (written back, loud,
        when it changed meanwhile)."""
        if not baseline.get("backup"):
            return
        backups = f"{self.lockfile.dir.rstrip('/')}/backups/"
        if (not str(baseline["backup"]).startswith(backups) or "/.." in str(baseline["backup"])
                or baseline.get("definition") != self.manager.definition_path(baseline["service"])):
            log.warning(f"{self.name}: the host's lock names a backup {baseline['backup']} or a "
                        f"definition {baseline.get('definition')} that are not ddlab's for "
                        f"{baseline['service']}: not writing anything back")
            return
        current = self.manager.definition(baseline["service"])
        if current is not None and digest(current) == baseline["sha256"]:
            return
        log.warning(f"{self.name}: the baseline's definition {baseline['definition']} changed "
                    f"while ddlab held the host; putting back the copy {baseline['backup']}")
        saved = self.transport.read_file(baseline["backup"])
        self.transport.write_file(baseline["definition"], saved, mode=0o644)
        self.manager.reload()

    def restore_baseline(self, *, timeout_s: float = 300.0) -> None:
        """The baseline's definition as found; started again if it was active, and waited for.
        Nothing on a Slurm host: there is no baseline to put back."""
        if self.profile.scheduler == "slurm":
            return
        baseline = self._baseline_record()
        self._put_back_definition(baseline)
        if not baseline.get("was_active"):
            return
        service = self.profile.baseline_service  # never a name the host's files give
        log.info(f"{self.name}: starting baseline {service} again")
        self.manager.start(service)
        self.wait_active(service, timeout_s=timeout_s)
        self.restored_baseline = service

    def _baseline_record(self) -> dict:
        """The lock's record of the baseline, if it is the profile's ``baseline_service``:
        only that one is ever started, the host is no authority. A record naming another
        unit (a canary) is said and set aside, and so is an unreadable lock taken over:
        then the profile's baseline is put back if it is not active."""
        service = self.profile.baseline_service
        baseline = dict(self.lock.baseline) if self.lock else {}
        named = baseline.get("service")
        if named and not _same_unit(named, service):
            log.warning(f"{self.name}: the host's lock names {named} as the baseline, not the "
                        f"profile's baseline_service ({service or 'none'}): not starting it; only "
                        "the profile's baseline is ever started")
            baseline = {}
        elif named or not service or not self.lockfile.took_unreadable:
            return {**baseline, "service": service} if named else baseline
        if not service:
            return {}
        state = self.manager.state(service)
        if state.load_state == "not-found" or state.active_state in ("active", "activating"):
            return {}
        log.warning(f"{self.name}: no usable record of {service} in the host's lock; it is the "
                    "profile's baseline_service and not active: starting it")
        return {"service": service, "was_active": True}

    def wait_active(self, service: str, *, timeout_s: float) -> None:
        """Until ``service`` is active and, when the profile names ``baseline_port``,
        answers ``/health`` there: "active" alone proves little for a server."""
        port = self.profile.baseline_port
        url = self.transport.http_base(port) + "/health" if port else None
        with Heartbeat(f"{self.name}: {service}", timeout_s, interval_s=5) as beat:
            while True:
                state = self.manager.state(service)
                active = state.running or state.active_state == "active"
                if active and (url is None or _answers(url)):
                    beat.close(f"{service} is active" + (f" and answers {url}" if url else ""))
                    return
                if state.failed:
                    tail = redact_text(self.manager.logs(service))[-2000:]  # masked, then cut
                    raise ServiceError(f"baseline {service} on {self.name} failed to start again: "
                                       f"{state.active_state}/{state.sub_state} ({state.result})",
                                       fix=f"look at its journal (journalctl -u {service}) and "
                                           "start it by hand", service=service, journal_tail=tail)
                if beat.elapsed_s > timeout_s:
                    raise ServiceError(f"baseline {service} on {self.name} not active after "
                                       f"{timeout_s:.0f} s ({state.active_state}/{state.sub_state})",
                                       fix=f"check `systemctl status {service}` on the host",
                                       service=service)
                waiting = "/health" if active else f"{state.active_state}/{state.sub_state}"
                beat.beat(f"waiting for {service}: {waiting}")
                time.sleep(0.5)

    # --- variant ---------------------------------------------------------

    def start_variant(self, variant: Variant, *, run_dir: Path | None = None) -> Deployed:
        """Stop whatever variant ddlab runs here, then install and start this one.

        Refused, before anything changes, when the variant's service is the baseline or
        any service ddlab did not install (never written over), and when its port is
        taken already (whatever answers there would pass for the variant)."""
        self.check_held()  # a run that took the host may have put its own server on the port
        self.stop_variant()
        variant = self.on_host(variant)
        self._refuse_foreign(variant.unit_name)
        port = int(variant.config.flags.get("port") or DEFAULT_PORT)
        # a Slurm job's node is not known before the job runs: the ready check's
        # /server_info (the port it names) tells the variant from a stranger there
        taken = None if self.profile.scheduler == "slurm" else self._port_holder(port)
        if taken:
            raise PortTaken(f"port {port} on {self.name} is taken before {variant.name} starts "
                            f"({taken}): whatever answers there would pass for the variant",
                            fix="stop what holds it (the baseline_service named wrong?) or "
                                "--set port=... to another", port=port, holder=taken)
        run_dir = Path(run_dir) if run_dir else new_run_dir(variant.name)
        config = variant.config
        extra_env = self._install_probes(variant)
        unit = render_unit(variant, python=self.profile.python,
                           env_file=self.manager.env_file(variant.unit_name), extra_env=extra_env)
        spec = ServiceSpec(name=variant.unit_name, argv=config.argv(python=self.profile.python),
                           env={**config.env, **extra_env}, unit_text=unit,
                           workdir=str(config.unit.get("working_directory") or self.profile.workdir))
        write_text(run_dir / "unit.service", unit)
        write_json(run_dir / "config.json", {"host": self.name, **variant.to_dict(),
                                             "sglang_version": self.sglang_versions.get(variant.name)})
        record = Deployed(name=variant.name, hash=variant.hash, service=variant.unit_name,
                          port=port, run_dir=run_dir, host=self.profile.handle)
        self.lock.variant = record.to_record()
        self.lockfile.write(self.lock)  # recorded before it exists, so restore finds it
        with held_interrupts(f"{self.name}: recording what ddlab installs first"):
            # installed and registered as ddlab's together: a restore only removes the latter;
            # the intent first, so a kill -9 between the two still leaves it ddlab's
            self.installs.intend(spec.name, variant=variant.name)
            self.manager.install(spec)
            self.installs.add(spec.name, self.manager.definition(spec.name) or "",
                              variant=variant.name)
        invocation = self.manager.start(spec.name)
        record = Deployed(**{**record.__dict__, "invocation": invocation})
        self.lock.variant = record.to_record()
        self.lockfile.write(self.lock)
        log.info(f"{self.name}: started {variant.unit_name} (variant {variant.name}, "
                 f"hash {variant.hash}); evidence in {run_dir}")
        return record

    def stop_variant(self) -> None:
        """Stop and remove the variant ddlab runs here, if any (idempotent)."""
        current = self.current
        if current is None:
            return
        self.check_held()  # the variant is the other run's now, if it took the host
        baseline = self.profile.baseline_service
        if baseline and unit_name(current.service) == unit_name(baseline):
            # whatever the host's lock.json and installed.json say: production is never removed
            raise ServiceError(f"{self.name}: the lock names {current.service}, the host's "
                               "baseline_service, as ddlab's variant: not stopping or removing "
                               "it", service=current.service,
                               fix="the host's lock.json was edited or is corrupt: remove "
                                   "its variant entry by hand, then `ddlab restore --force`")
        definition = self.manager.definition(current.service)
        if definition is not None and not self.installs.owns(current.service, definition):
            raise ServiceError(f"{self.name}: the lock names {current.service} as ddlab's variant, "
                               "but ddlab did not install it (or it was changed since): not "
                               "stopping or removing it", service=current.service,
                               fix="if it is a leftover of ddlab's, remove it by hand; then "
                                   "`ddlab restore --force`")
        url = self._server_urls.get((current.service, current.invocation))
        self.manager.remove(current.service)
        if url:  # a job's end can be reported before its server let go of the port
            self._wait_server_gone(url, current.service)
        self.installs.forget(current.service)
        self.transport.run(["rm", "-rf", "--", self._probe_folder(current.service)], check=False)
        log.info(f"{self.name}: stopped and removed {current.service}")
        self.lock.variant = {}
        self.lockfile.write(self.lock)

    def _wait_server_gone(self, url: str, service: str, timeout_s: float = 30.0) -> None:
        """Until nothing answers at ``url`` (a Slurm job's server, on its node): Slurm may
        call a job ended while its processes still exit, and the slot's next job reuses
        the port. Bounded; a server still answering after ``timeout_s`` is logged."""
        import httpx

        from ddlab.lab import http_client

        beat = Heartbeat(f"{self.name}: {service}'s server to let go of its port", timeout_s,
                         interval_s=5.0)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                http_client.get(url + "/health", timeout=1.0)
            except httpx.HTTPError:
                beat.close()
                return
            beat.beat("still answering")
            time.sleep(0.2)
        beat.close("still answering")
        log.warning(f"{self.name}: {service}'s server still answers at {url} {timeout_s:.0f} s "
                    "after its job ended; the next job on this port may fail to bind")

    def _probe_folder(self, service: str) -> str:
        """Where a variant's probe hook lives on the host (:func:`plans.probe_folder`)."""
        return probe_folder(self.lockfile.dir, service)

    def _install_probes(self, variant: Variant) -> dict:
        """The probe hook's two files in the variant's own folder on the host and the
        environment that arms them (:mod:`ddlab.probes`); the server's files and
        site-packages are never written, and removing the variant removes the folder."""
        probes = variant.config.probes
        if not probes:
            return {}
        folder = self._probe_folder(variant.unit_name)
        self.transport.run(["mkdir", "-p", "--", folder])
        for name, text in probe_files().items():
            self.transport.write_file(f"{folder}/{name}", text.encode("utf-8"), mode=0o644)
        log.info(f"{self.name}: probes {', '.join(probes)} armed from {folder}")
        return probes_environment(variant, self.lockfile.dir)

    def _refuse_foreign(self, service: str) -> None:
        baseline = self.profile.baseline_service
        if baseline and unit_name(service) == unit_name(baseline):
            raise ConfigError(f"{service}: is the host's baseline_service; a variant may never "
                              "take production's name", fix="change the variant (--set ...) or "
                              "the base, so that its name differs", service=service)
        existing = self.manager.definition(service)
        if existing is not None and not self.installs.owns(service, existing):
            raise ServiceError(f"{service} exists on {self.name} and ddlab did not install it (or "
                               "it was changed since): refusing to write over it",
                               fix="deploy a variant with another name, or remove that service "
                                   "by hand if it is really a leftover", service=service)

    def _port_holder(self, port: int) -> str | None:
        """Who listens on ``port`` on the host now (None: nobody)."""
        done = self.transport.run(["ss", "-Hltnp", f"sport = :{int(port)}"], check=False)
        if done.exit_code == 0:
            lines = [line for line in done.stdout.splitlines() if line.strip()]
            return ("listening: " + " ".join(lines[0].split()[3:])[:200]) if lines else None
        probe = ("import socket, sys; s = socket.socket(); s.settimeout(1); "
                 "sys.exit(0 if s.connect_ex(('127.0.0.1', int(sys.argv[1]))) == 0 else 1)")
        done = self.transport.run([self.profile.python, "-c", probe, str(int(port))], check=False)
        return "something accepts connections there" if done.exit_code == 0 else None

    # --- restore ---------------------------------------------------------

    def restore(self, *, timeout_s: float = 300.0) -> None:
        """Variant gone, baseline back and active, lock released; Ctrl-C waits for it.

        If the baseline does not come back, the lock keeps its record, so that
        ``ddlab restore`` (or the next run, taking the lock over) tries again.
        A host another run took is left alone: it is that run's to put back. Reading the
        host's lock is held too: a pool's interrupt for this thread (sweeps/pool.py, raised
        only outside held blocks) landing in that read cut the restore short, its baseline
        left down (a fresh clone's pool Ctrl-C test, once)."""
        with held_interrupts(f"{self.name}: restoring the baseline first"):
            taken = self.taken()
            if taken is not None:
                log.info(f"{self.name}: not putting the host back: {taken.describe()}; it is "
                         "that run's now")
                return
            try:
                try:
                    self.stop_variant()
                except StateFileError:  # which variant is ddlab's is unknown: left, said
                    self.restore_baseline(timeout_s=timeout_s)  # production back all the same
                    raise
                self.restore_baseline(timeout_s=timeout_s)
                self.lock.baseline = {}
                self.lockfile.release()
            except DdlabError as err:  # the error says how to finish the job later
                add_restore_hint(err, self.name)
                raise


def _same_unit(a, b) -> bool:
    try:
        return bool(a and b) and unit_name(str(a)) == unit_name(str(b))
    except ConfigError:
        return False


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, ValueError):
        return False


def add_restore_hint(err: DdlabError, host: str) -> None:
    """Append to ``err``'s fix how to finish putting ``host`` back (once)."""
    if "ddlab restore" not in (err.fix or ""):
        err.fix = (f"{err.fix}; then " if err.fix else "") + (
            f"`ddlab restore --host {host}` finishes putting the host back "
            "(its lock keeps what to restore)")


def _answers(url: str) -> bool:
    import httpx

    from ddlab.lab import http_client

    try:
        return http_client.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def deployed(host: str | HostProfile, variant: Variant, *, what: str | None = None,
             run_dir: Path | None = None, force: bool = False,
             wait_s: float | None = None) -> Iterator[tuple[Lab, Deployed]]:
    """Deploy ``variant`` on ``host`` for the ``with`` block; restore afterwards, always."""
    with Lab(host, what=what or f"variant {variant.name}", force=force, wait_s=wait_s) as lab:
        try:
            lab.stop_baseline()
            yield lab, lab.start_variant(variant, run_dir=run_dir)
        finally:
            lab.restore()


def _api_key_in(definition: str | None) -> str | None:
    """The ``--api-key`` value of a service definition: a process spec's argv (JSON) or
    a unit's ``ExecStart=``."""
    if not definition:
        return None
    try:
        argv = json.loads(definition)["argv"]
    except (ValueError, KeyError, TypeError):
        joined = re.sub(r"\\\n", " ", definition)  # systemd's continuation lines
        line = next((l for l in joined.splitlines() if l.startswith("ExecStart=")), "")
        argv = exec_words(line.partition("=")[2])
    for i, arg in enumerate(argv):
        if arg == "--api-key" and i + 1 < len(argv):
            return argv[i + 1]
        if isinstance(arg, str) and arg.startswith("--api-key="):
            return arg.partition("=")[2]
    return None
