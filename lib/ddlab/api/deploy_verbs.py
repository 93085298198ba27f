"""Deploy, watch, restore: one variant on one host, from the front door.

:func:`plan_deploy` validates a variant for a host (nothing touches it);
:func:`deploy` stops the baseline and starts the variant, leaving it running
under a persistent host lock; :func:`watch` follows it until ready, crashed or
timed out, drives the verify path, and puts the baseline back unless the
variant works and the caller keeps it; :func:`restore` puts the host back.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ddlab.api.common import RESTORE_CHOICES, check_positive, check_wait, profile_of
from ddlab.config.overrides import parse_overrides
from ddlab.core.errors import (
    ConfigError,
    DdlabError,
    HostError,
    HostKeyError,
    Interrupted,
    ServiceError,
)
from ddlab.core.interrupts import as_interrupt
from ddlab.core.log import get_logger
from ddlab.core.progress import VerdictPlace
from ddlab.core.redact import redact_text
from ddlab.core.run_folders import record_verdict
from ddlab.hosts.profiles import HostProfile
from ddlab.lab.deploy import Deployed, Lab, add_restore_hint
from ddlab.lab.lossless import TOLERANCE, check_prompts, check_tolerance
from ddlab.lab.plans import DeployPlan, DryRun, make_plan

if TYPE_CHECKING:
    # the watch, and the diagnosis under it, load when a job watches: `ddlab deploy` and
    # `restore` go without them (0.15 s of CPU a call)
    from ddlab.lab.watch import Verdict

__all__ = ["plan_deploy", "deploy", "watch", "restore", "RESTORE_CHOICES"]

log = get_logger(__name__)


def plan_deploy(host: str | HostProfile = "local", base: str | None = None, overrides=(),
                *, read_baseline: bool = False, probes=()) -> DeployPlan:
    """Validate a variant for a host (base + overrides); nothing changes on the host.
    The command is checked against the SGLang release the host runs (asked with one
    command, as ``deploy`` asks, when neither config nor profile names it);
    ``read_baseline`` also reads the baseline's unit for a diff. ``probes``
    (``DOTTED.PATH[:MODE]`` texts, :mod:`ddlab.probes`) wrap server functions in the
    variant only; the same as an override ``probes=[...]``."""
    if probes:
        overrides = {**parse_overrides(overrides), "probes": [probes] if isinstance(probes, str)
                     else list(probes)}
    return make_plan(profile_of(host), base, overrides, read_baseline=read_baseline)

def deploy(plan: DeployPlan, *, force: bool = False, dry_run: bool = False,
           wait_s: float | None = None) -> Deployed | DryRun:
    """Stop the baseline and start the planned variant; it runs until :func:`restore`
    (or a :func:`watch` that restores). With ``dry_run`` nothing changes on the host
    (it is only asked for its SGLang version, as the deploy asks): the answer says so,
    with the unit that would run. ``force``: take the host from
    another ddlab run (that run ends ``preempted``); ``wait_s``: queue behind one for up
    to that many seconds instead."""
    check_wait(wait_s)
    if dry_run:  # the plan has asked the host for its SGLang version, as the deploy does
        return DryRun(plan)
    with Lab(plan.host, what=f"deploy {plan.variant.name}", persistent=True, force=force,
             wait_s=wait_s) as lab:
        lab.check_variants([plan.variant])  # with the host's own SGLang, before anything changes
        _say_baseline_diff(lab, plan)  # what replaces production, before it is stopped
        try:
            lab.stop_baseline()
            return lab.start_variant(plan.variant)
        except BaseException:
            lab.restore()  # nothing half-deployed stays behind
            raise

def _say_baseline_diff(lab: Lab, plan: DeployPlan) -> None:
    """The running baseline's unit against the variant's, as a compact unified diff (secrets
    masked), on the log before the baseline is stopped: what is about to replace
    production. systemd hosts only (a process manager keeps no unit text)."""
    service = lab.profile.baseline_service
    if not service or lab.profile.service_manager != "systemd" or lab.lock.baseline:
        return  # none, or a deploy that follows one: production is stopped already
    running = lab.manager.definition(service)
    if running is None:
        return
    plan.baseline_unit = redact_text(running)
    log.info(f"{lab.name}: {plan.variant.unit_name} against the running baseline {service} "
             f"(--- baseline, +++ variant):\n{plan.diff_to_baseline()}")

def watch(host: str | HostProfile = "local", *, timeout_s: float = 600.0, probe: bool = True,
          grace_s: float = 5.0, restore: str = "auto", heartbeat_s: float = 5.0, patterns=(),
          force: bool = False, run_dir: str | Path | None = None, lossless: bool = True,
          lossless_tolerance: float = TOLERANCE, lossless_prompts=(),
          wait_s: float | None = None) -> Verdict:
    """Watch the deployed variant until ready, crashed or timed out (probing the verify
    path once ready, then the lossless check: greedy tokens against the model's own,
    ``lossless_tolerance`` the token match rate that passes, ``lossless_prompts`` the
    prompts compared, empty for the shipped ones); then put the baseline back
    per ``restore``: ``auto`` unless ready with every probe passed, ``always``, or
    ``never``. A variant that serves other tokens is ``wrong_output``, never ready; one
    whose host another ddlab run took is ``preempted`` (left to that run), never crashed.
    ``wait_s``: queue behind another run holding the host, up to that many seconds."""
    if restore not in RESTORE_CHOICES:
        raise ConfigError(f"restore={restore!r}: must be one of {', '.join(RESTORE_CHOICES)}",
                          fix="auto puts the baseline back unless the variant is ready and its "
                              "probes passed", value=restore)
    check_positive(timeout_s=timeout_s, grace_s=grace_s, heartbeat_s=heartbeat_s)
    check_wait(wait_s)
    check_tolerance(lossless_tolerance)
    prompts = check_prompts(lossless_prompts)
    profile = profile_of(host)
    place = VerdictPlace(f"watching the variant on {profile.name}: live status below")
    try:
        verdict = _watch_and_restore(profile, timeout_s=timeout_s, probe=probe, grace_s=grace_s,
                                     restore=restore, heartbeat_s=heartbeat_s,
                                     patterns=patterns, force=force, wait_s=wait_s,
                                     lossless=lossless,
                                     lossless_tolerance=lossless_tolerance, prompts=prompts)
    except BaseException as err:
        if isinstance(err, (HostError, ServiceError)) and not isinstance(err, HostKeyError):
            # wherever it failed (the lock, the watch, the restore), the variant may still
            # run and the baseline be down: the lock keeps what restore needs
            add_restore_hint(err, profile.name)
        verdict = err.verdict if isinstance(err, Interrupted) else None
        place.update(verdict if verdict is not None else f"NO VERDICT: {type(err).__name__}: {err}")
        record_verdict(verdict.to_dict() if verdict is not None else
                       {"state": "failed", "headline": f"{type(err).__name__}: {err}"}, run_dir)
        raise
    place.update(verdict)
    record_verdict(verdict.to_dict(), run_dir)
    return verdict

def _watch_and_restore(profile: HostProfile, *, restore: str, force: bool, wait_s, **how) -> Verdict:
    from ddlab.lab.watch import watch as _watch

    with Lab(profile, what="watch", persistent=True, force=force, wait_s=wait_s) as lab:
        try:
            verdict = _watch(lab, **how)
        except BaseException as err:
            _restore_after(lab, err.verdict if isinstance(err, Interrupted) else None, restore,
                           interrupted=isinstance(err, KeyboardInterrupt))
            raise
        works = verdict.state == "ready" and not verdict.probe_failed
        if verdict.state == "connection_lost":
            log.warning(f"{lab.name}: the host does not answer, so the baseline cannot be put "
                        f"back now: {verdict.next_step}")
        elif restore == "always" or (restore == "auto" and not works):
            try:
                _restore_after(lab, verdict, restore, interrupted=False)
            except DdlabError as failed:  # the verdict stands, and says the host is not back
                add_restore_hint(failed, profile.name)
                log.error(f"{lab.name}: putting the baseline back failed: {failed}")
                verdict.restore_error = redact_text(failed.message)
            verdict.notes = [n for n in verdict.notes if "is stopped while" not in n]
        return verdict

def _restore_after(lab: Lab, verdict: Verdict | None, restore: str, *, interrupted: bool) -> None:
    """Restore (unless ``never``) after a watch; an interrupt, before or during the
    restore (which holds it until done), says what was left and keeps the verdict."""
    try:
        if restore != "never":
            with as_interrupt():
                lab.restore()
    except KeyboardInterrupt as again:
        log.warning(_interrupted_hint(lab, verdict, restore))
        raise Interrupted(verdict=verdict) from again  # the watch had ended: its verdict stands
    if interrupted:
        log.warning(_interrupted_hint(lab, verdict, restore))

def _interrupted_hint(lab: Lab, verdict: Verdict | None, restore: str) -> str:
    """What an interrupted watch left, and how to go on."""
    record = f"the record is in {verdict.run_dir}; " if verdict is not None else ""
    if restore == "never":
        return (f"{lab.name}: watch interrupted; {record}the variant still runs: resume with "
                f"`ddlab watch --host {lab.name}`, or `ddlab restore --host {lab.name}`")
    return (f"{lab.name}: watch interrupted; {record}variant removed, baseline back; "
            f"to try again, deploy it again (`ddlab deploy --host {lab.name} ...`)")

def restore(host: str | HostProfile = "local", *, force: bool = False,
            wait_s: float | None = None) -> str:
    """Put the host back as ddlab found it (variant gone, baseline back, lock released);
    returns what it did, in one line. ``force``: take the host from a ddlab run that is
    gone (or from a live one, which then ends preempted); ``wait_s``: queue behind it."""
    check_wait(wait_s)
    profile = profile_of(host)
    with Lab(profile, what="restore", persistent=True, force=force, wait_s=wait_s,
             adopt=True) as lab:  # what this user's deploy left, from whichever checkout
        current, baseline = lab.current, dict(lab.lock.baseline)
        lab.restore()
    done = [f"removed {current.service}" if current else "no variant was deployed"]
    if lab.restored_baseline:  # the profile's, whatever the host's lock named
        done.append(f"baseline {lab.restored_baseline} active again")
    elif baseline.get("service") == profile.baseline_service:
        done.append(f"baseline {baseline['service']} left as found ({baseline.get('state_found')})")
    return f"{profile.name}: " + "; ".join(done) + "; lock released"
