"""The jobs a person runs, shared by the CLI and the notebooks.

- :func:`plan_deploy`: validate a variant (nothing touches a host) and show its
  unit, its diff to the base and to the host's baseline unit;
- :func:`deploy_variant`: stop the baseline, start the variant, leave it
  running under a persistent host lock (``ddlab deploy``);
- :func:`watch_deployed`: watch what is deployed until ready / crashed /
  timeout, probing the verify path; then put the baseline back unless the
  variant is ready and the caller keeps it (``ddlab watch``);
- :func:`restore_host`: variant gone, baseline back, lock released
  (``ddlab restore``).

In a notebook the verdict is displayed first, in a slot that the watch fills
when it ends, with the live heartbeat below it; inside a ``ddlab run`` it is
also left in the run folder (``verdict.json``: the report's headline).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from ddlab.deploy import Deployed, Lab, add_restore_hint
from ddlab.errors import ConfigError, HostError, HostKeyError, LockError, ServiceError
from ddlab.hosts import HostProfile, load_host
from ddlab.params import Variant, make_variant
from ddlab.progress import Slot
from ddlab.report import record_verdict
from ddlab.redact import redact_text
from ddlab.units import render_unit
from ddlab.watch import Verdict, watch

__all__ = ["Plan", "plan_deploy", "deploy_variant", "watch_deployed", "restore_host",
           "RESTORE_CHOICES"]

RESTORE_CHOICES = ("auto", "always", "never")


def _profile(host: str | HostProfile) -> HostProfile:
    return host if isinstance(host, HostProfile) else load_host(host)


def default_base(profile: HostProfile) -> str:
    """The base a host's variants start from when none is named (profile key ``base``)."""
    return profile.base


@dataclass
class Plan:
    """A validated variant for a host, before anything touched the host.

    The unit texts are for reading (printed, displayed, diffed): their secret
    values are masked. What is installed is rendered again by the deploy."""

    host: HostProfile
    variant: Variant
    unit: str
    base_unit: str
    baseline_unit: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def headline(self) -> str:
        what = self.variant.describe_changes() or "no change: the base as it is"
        baseline = self.host.baseline_service or "none"
        return (f"PLAN: deploy {self.variant.name} ({self.variant.unit_name}) on "
                f"{self.host.name}; baseline {baseline} stopped meanwhile; change: {what}")

    def diff_to_base(self) -> str:
        return _diff(self.base_unit, self.unit, "base", self.variant.name)

    def diff_to_baseline(self) -> str:
        if self.baseline_unit is None:
            return "(no baseline unit to compare: the host profile names none, or it was not read)"
        return _diff(self.baseline_unit, self.unit, self.host.baseline_service, self.variant.name)

    def render(self) -> str:
        return "\n".join([self.headline, *self.notes, "", redact_text(self.unit)])

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython's text/plain
        printer.text(self.headline)

    def _repr_html_(self) -> str:
        from html import escape

        return (f"<div style='border-left:6px solid #0969da;padding:4px 10px'>"
                f"<b>{escape(self.headline)}</b><pre>{escape(redact_text(self.unit))}</pre></div>")


def _diff(old: str, new: str, old_name: str, new_name: str) -> str:
    lines = difflib.unified_diff(redact_text(old).splitlines(), redact_text(new).splitlines(),
                                 old_name, new_name, lineterm="", n=1)
    return "\n".join(lines) or "(identical)"


def plan_deploy(host: str | HostProfile = "local", base: str | None = None, overrides=(),
                *, read_baseline: bool = False) -> Plan:
    """Validate everything first; with ``read_baseline`` also fetch the baseline's unit."""
    profile = _profile(host)
    variant = make_variant(base or default_base(profile), overrides)
    plan = Plan(host=profile, variant=variant,
                unit=redact_text(render_unit(variant, python=profile.python)),
                base_unit=redact_text(render_unit(make_variant(variant.base, []),
                                                  python=profile.python)))
    if read_baseline and profile.baseline_service:
        baseline_unit = _read_baseline_unit(profile)
        plan.baseline_unit = redact_text(baseline_unit) if baseline_unit is not None else None
    return plan


def _read_baseline_unit(profile: HostProfile) -> str | None:
    from ddlab.hosts import connect

    with connect(profile) as transport:
        if profile.service_manager != "systemd":
            return None
        done = transport.run(["systemctl", "cat", "--", profile.baseline_service], check=False)
        return done.stdout if done.exit_code == 0 else None


def deploy_variant(plan: Plan, *, force: bool = False, dry_run: bool = False,
                   say=None) -> Deployed | None:
    """Stop the baseline and start the variant; it keeps running until restore.

    With ``dry_run`` nothing touches the host (the plan is all there is)."""
    if dry_run:
        print(f"DRY RUN: nothing deployed on {plan.host.name}; the unit above is what would run")
        return None
    with Lab(plan.host, what=f"deploy {plan.variant.name}", persistent=True, force=force,
             say=say) as lab:
        try:
            lab.stop_baseline()
            return lab.start_variant(plan.variant)
        except BaseException:
            lab.restore()  # nothing half-deployed stays behind
            raise


def watch_deployed(host: str | HostProfile = "local", *, timeout_s: float = 600.0,
                   probe: bool = True, grace_s: float = 5.0, restore: str = "auto",
                   heartbeat_s: float = 5.0, patterns=(), force: bool = False,
                   say=None) -> Verdict:
    """Watch the deployed variant; restore per ``restore`` (auto: unless ready with every probe passed)."""
    if restore not in RESTORE_CHOICES:
        raise ConfigError(f"restore={restore!r}: must be one of {', '.join(RESTORE_CHOICES)}",
                          fix="auto puts the baseline back unless the variant is ready and its probes passed",
                          value=restore)
    _check_positive(timeout_s=timeout_s, grace_s=grace_s, heartbeat_s=heartbeat_s)
    profile = _profile(host)
    slot = Slot(f"watching the variant on {profile.name}: live status below")
    try:
        with Lab(profile, what="watch", persistent=True, force=force, say=say) as lab:
            try:
                verdict = watch(lab, timeout_s=timeout_s, probe=probe, grace_s=grace_s,
                                heartbeat_s=heartbeat_s, patterns=patterns)
            except BaseException as err:
                _restore_after(lab, getattr(err, "verdict", None), restore,
                               interrupted=isinstance(err, KeyboardInterrupt))
                raise
            works = verdict.state == "ready" and not verdict.probe_failed
            if restore == "always" or (restore == "auto" and not works):
                _restore_after(lab, verdict, restore, interrupted=False)
    except BaseException as err:
        if isinstance(err, (HostError, ServiceError)) and not isinstance(err, (HostKeyError, LockError)):
            # wherever it failed (taking the lock, watching, restoring), the variant may
            # still run and the baseline be down: the lock keeps what restore needs
            add_restore_hint(err, profile.name)
        verdict = getattr(err, "verdict", None)  # an interrupted watch still has one
        slot.update(verdict if verdict is not None else f"NO VERDICT: {type(err).__name__}: {err}")
        record_verdict(verdict.to_dict() if verdict is not None else
                       {"state": "failed", "headline": f"{type(err).__name__}: {err}"})
        raise
    slot.update(verdict)
    record_verdict(verdict.to_dict())  # the ddlab run folder's verdict, when in one
    return verdict


def _restore_after(lab: Lab, verdict: Verdict | None, restore: str, *, interrupted: bool) -> None:
    """Restore (unless ``never``) after a watch; an interrupt, before or during the
    restore (which holds it until done), says what was left and keeps the verdict."""
    try:
        if restore != "never":
            lab.restore()
    except KeyboardInterrupt as again:
        again.verdict = verdict  # the watch had ended: its verdict still stands
        lab.say(_interrupted_hint(lab, verdict, restore))
        raise
    if interrupted:
        lab.say(_interrupted_hint(lab, verdict, restore))


def _interrupted_hint(lab: Lab, verdict: Verdict | None, restore: str) -> str:
    """What an interrupted watch left, and how to go on."""
    record = f"the record is in {verdict.run_dir}; " if verdict is not None else ""
    if restore == "never":
        return (f"{lab.name}: watch interrupted; {record}the variant still runs: resume with "
                f"`ddlab watch --host {lab.name}`, or `ddlab restore --host {lab.name}`")
    return (f"{lab.name}: watch interrupted; {record}variant removed, baseline back; "
            f"to try again, deploy it again (`ddlab deploy --host {lab.name} ...`)")


def restore_host(host: str | HostProfile = "local", *, force: bool = False, say=None) -> str:
    """Put the host back as ddlab found it; says what it did."""
    with Lab(_profile(host), what="restore", persistent=True, force=force, say=say) as lab:
        current, baseline = lab.current, dict(lab.lock.baseline)
        lab.restore()
    done = [f"removed {current.service}" if current else "no variant was deployed"]
    if baseline.get("was_active"):
        done.append(f"baseline {baseline['service']} active again")
    elif baseline.get("service"):
        done.append(f"baseline {baseline['service']} left as found ({baseline.get('state_found')})")
    return f"{_profile(host).name}: " + "; ".join(done) + "; lock released"


def _check_positive(**values) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(f"{name}={value!r}: must be a number > 0",
                              fix=f"e.g. -p {name} 600" if name == "timeout_s" else f"e.g. {name}=5",
                              key=name, value=value)


def run_dir_of(verdict: Verdict) -> Path:
    return Path(verdict.run_dir)
