"""A deploy plan: a validated variant for a host, before anything touches the host.

:func:`make_plan` validates the host profile, the base and the overrides and
renders the variant's unit (and the base's, for a diff). It checks the command
against the SGLang release the host runs, asked as ``deploy`` asks when neither
the config nor the profile names one (one read-only command,
:func:`ddlab.lab.commands.ask_sglang_version`; a host that cannot say or be
reached is said in the notes, and the newest table is used). With
``read_baseline`` it also reads the baseline service's unit for a second diff;
nothing is changed on the host. The unit texts are for reading
(printed, displayed, diffed): their secret values are masked. What is
installed is rendered again by the deploy, with the real values.

:func:`as_host_runs` is where a host picks the embedded target: on a ``local``
host a base of a family in :data:`EMBEDDED_ON_LOCAL` (vLLM) runs as
``family.embedded(config)``, i.e. ``python -m ddlab.target --dialect vllm
ddlab-tiny ...``; SGLang's embedded target is its own base (``local``, the local
host's default), so its other bases are unchanged.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from html import escape

import dataclasses

from ddlab.config.families import TARGET_MODULE
from ddlab.config.units import render_unit
from ddlab.config.variants import Variant, make_variant
from ddlab.core.errors import ConfigError
from ddlab.core.redact import redact_text
from ddlab.hosts import connect
from ddlab.hosts.profiles import HostProfile
from ddlab.hosts.services import unit_name
from ddlab.lab.commands import ask_sglang_version, check_command
from ddlab.probes import probe_env

__all__ = ["DeployPlan", "DryRun", "make_plan", "as_host_runs", "EMBEDDED_ON_LOCAL"]

# families whose bases a `local` host runs on the embedded target, in the family's dialect
# (their servers are not what this machine runs: `python -m ddlab.target --dialect vllm`)
EMBEDDED_ON_LOCAL = ("vllm",)
_MODEL_SIZED = ("max_model_len",)  # a base's figures for its real model, not the target's


def as_host_runs(variant: Variant, profile: HostProfile) -> Variant:
    """``variant`` as ``profile``'s host runs it, before its overrides: on a ``local``
    host, a base of a family in :data:`EMBEDDED_ON_LOCAL` runs on the embedded target
    (``family.embedded``: the target's models and interpreter, the base's own working
    directory dropped for the host's, and its ``max_model_len`` unless the variant sets
    it); anything else as it is. Name and changes stay the
    variant's (as a profile's overrides: how a host runs it, not what it changes)."""
    config = variant.config
    if profile.transport != "local" or config.module == TARGET_MODULE \
            or config.family.name not in EMBEDDED_ON_LOCAL:
        return variant
    embedded = config.family.embedded(config)
    unit = {k: v for k, v in embedded.unit.items() if k != "working_directory"}
    # the base's length is its real model's (Qwen3-8B's 32768): the target's model has its
    # own, and would refuse a longer one as vLLM does; a length the variant sets is kept
    flags = {k: v for k, v in embedded.flags.items()
             if k not in _MODEL_SIZED or k in variant.changes}
    return dataclasses.replace(variant, config=dataclasses.replace(embedded, unit=unit,
                                                                   flags=flags))


@dataclass
class DeployPlan:
    """A validated variant for a host, before anything touches it: the variant, its unit
    (secrets masked) and the base's for a diff, the baseline's unit when read, notes (such
    as which SGLang release the command was checked against); see the module docstring."""

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
        return _diff(self.baseline_unit, self.unit, self.host.baseline_service, self.variant.unit_name)

    def render(self) -> str:
        """The headline, then the unit."""
        return "\n".join([self.headline, *self.notes, "", self.unit])

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython's text/plain
        printer.text(self.headline)

    def _repr_html_(self) -> str:
        return (f"<div style='border-left:6px solid #0969da;padding:4px 10px'>"
                f"<b>{escape(self.headline)}</b><pre>{escape(self.unit)}</pre></div>")


@dataclass
class DryRun:
    """What a dry-run deploy answers: nothing touched the host, and the unit that would run."""

    plan: DeployPlan
    exit_code = 0

    def render(self) -> str:
        baseline = self.plan.host.baseline_service
        unchecked = ([f"not checked: whether {baseline} (baseline_service) exists on "
                      f"{self.plan.host.name}; a dry run does not touch the host, the deploy "
                      "refuses a baseline_service that is not there"]
                     if baseline and self.plan.baseline_unit is None else [])
        return "\n".join([f"DRY RUN: nothing deployed on {self.plan.host.name}; this unit would "
                          "run", *self.plan.notes, *unchecked, "", self.plan.unit])

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython's text/plain
        printer.text(self.render())


def _diff(old: str, new: str, old_name: str, new_name: str) -> str:
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name,
                                 lineterm="", n=1)
    return "\n".join(lines) or "(identical)"


def make_plan(profile: HostProfile, base: str | None = None, overrides=(), *,
              read_baseline: bool = False) -> DeployPlan:
    """Validate everything first, the command against the server's parser table
    (:mod:`ddlab.lab.commands`: the release the config or the profile names, else the
    one the host says it runs, else the newest; the deploy checks again); with
    ``read_baseline`` also fetch the baseline's unit."""
    variant = as_host_runs(make_variant(base or profile.base, overrides), profile)
    if profile.baseline_service and unit_name(variant.unit_name) == unit_name(profile.baseline_service):
        raise ConfigError(f"{variant.unit_name}: is {profile.name}'s baseline_service; a variant "
                          "may never take production's name", key="baseline_service",
                          fix="change the variant (--set ...) or the base, so that its name differs")
    # a value no unit can hold, first; with the probes' environment deploy adds (the hook's
    # folder as the profile names the state dir: the host expands ~ when it installs it)
    unit = render_unit(variant, python=profile.python,
                       extra_env=probes_environment(variant, profile.state_dir))
    version, source = ask_sglang_version(variant.config, profile)  # as the deploy asks
    check = check_command(variant.config, version=version, version_source=source)
    check.raise_errors(variant.name)
    plan = DeployPlan(host=profile, variant=variant, notes=check.notes(), unit=redact_text(unit),
                      base_unit=redact_text(render_unit(make_variant(variant.base, []),
                                                        python=profile.python)))
    if read_baseline and profile.baseline_service:
        baseline_unit = _read_baseline_unit(profile)
        plan.baseline_unit = redact_text(baseline_unit) if baseline_unit is not None else None
    return plan


def probe_folder(state_dir: str, service: str) -> str:
    """Where a variant's probe hook lives on its host: ddlab's state, the unit's name."""
    return f"{state_dir.rstrip('/')}/probes/{unit_name(service)}"


def probes_environment(variant: Variant, state_dir: str) -> dict:
    """The environment that arms ``variant``'s probes from its own folder (none without)."""
    if not variant.config.probes:
        return {}
    return probe_env(variant.config.probes, probe_folder(state_dir, variant.unit_name),
                     pythonpath=variant.config.env.get("PYTHONPATH", ""))


def _read_baseline_unit(profile: HostProfile) -> str | None:
    if profile.service_manager != "systemd":
        return None
    with connect(profile) as transport:
        done = transport.run(["systemctl", "cat", "--", profile.baseline_service], check=False)
        return done.stdout if done.exit_code == 0 else None
