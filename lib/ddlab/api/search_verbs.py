"""Searches from the front door: bisect a failing variant, find the envelope that serves.

Each trial is a cell of a sweep in the store (:mod:`ddlab.sweeps.search_run`); the
answer is shown in the place and left in ``run_dir`` (the verdict, ``trials.csv`` and
the figure), also when the search stops on an error or Ctrl-C.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ddlab.api.common import check_positive, check_wait
from ddlab.core.errors import DdlabError, Interrupted
from ddlab.core.log import get_logger
from ddlab.core.progress import VerdictPlace
from ddlab.core.run_folders import record_verdict
from ddlab.hosts.profiles import load_host
from ddlab.report.parameters import parameter_value
from ddlab.sweeps.plan import SweepOptions
from ddlab.sweeps.store import Store

if TYPE_CHECKING:  # pandas and matplotlib load when a search is reported, not on import
    from ddlab.report.search_report import SearchReport

__all__ = ["bisect", "envelope"]

log = get_logger(__name__)


def bisect(*, host: str = "", base: str = "", good=(), bad=(), max_trials: int = 12,
           max_time_s: float = 7200.0, timeout_s: float = 600.0, probe: bool = True,
           dry_run: bool = False, store: Store | None = None,
           run_dir: str | Path | None = None, wait_s: float | None = None) -> SearchReport:
    """Find the change that breaks it: base + ``good`` overrides serves, base + ``bad``
    fails; delta debugging over the override keys finds the smallest set of changes from
    the good config that still fails the same way (a trial that fails another way is
    reported as such, never merged), then tries the bad config without it.

    Every trial is a cell of a sweep in the store (deployed, watched, probed, checked
    for lossless tokens, diagnosed); the same bisect run again reuses its finished
    trials, so an interrupted one resumes. The baseline is stopped once and put back at
    the end, on an error and on Ctrl-C. ``max_trials`` / ``max_time_s``: the budget;
    when it runs out the report says what is known and what is not. ``timeout_s``: per
    trial, until ready. ``dry_run``: the plan only. ``host``: "" is ``local``.
    ``wait_s``: queue behind another ddlab run holding the host, up to that many seconds.
    """
    from ddlab.sweeps.search_plan import plan_bisect

    check_wait(wait_s)
    profile = load_host(host or "local")
    plan = plan_bisect(profile, base or profile.base, parameter_value("good", good),
                       parameter_value("bad", bad), options=_search_options(timeout_s, probe),
                       max_trials=max_trials, max_time_s=max_time_s)
    return _search(plan, dry_run=dry_run, store=store, run_dir=run_dir, wait_s=wait_s)

def envelope(*, host: str = "", base: str = "", fixed=(), search=(), fallback=(),
             max_trials: int = 12, max_time_s: float = 7200.0, timeout_s: float = 600.0,
             probe: bool = True, dry_run: bool = False, store: Store | None = None,
             run_dir: str | Path | None = None, wait_s: float | None = None) -> SearchReport:
    """Find the largest values that serve: base + ``fixed`` as asked, then for each
    ``search`` key (``KEY=LO..HI``, in order; powers of two where the flag wants them;
    an end left out comes from the flag table) a binary search for the largest value
    that is ready, probes fine and is lossless. When even the lowest value fails, the
    next ``fallback`` (``cuda_graph=false``; applied in order, and kept) is tried and the
    key searched again. The answer names each boundary and the failure above it.

    Trials, budget, resume, baseline, ``dry_run`` and ``wait_s`` as in :func:`bisect`.
    """
    from ddlab.sweeps.search_plan import plan_envelope

    check_wait(wait_s)
    profile = load_host(host or "local")
    base = base or profile.base
    plan = plan_envelope(profile, base, parameter_value("fixed", fixed),
                         _family_search(base, parameter_value("search", search)),
                         parameter_value("fallback", fallback),
                         options=_search_options(timeout_s, probe), max_trials=max_trials,
                         max_time_s=max_time_s)
    return _search(plan, dry_run=dry_run, store=store, run_dir=run_dir, wait_s=wait_s)

def _family_search(base, search):
    """The envelope notebook's default search is SGLang's (``context_length``,
    ``max_running_requests``); on a base of another family, left at that default, the
    family's own stands in (vLLM: ``num_speculative_tokens``, ``max_num_seqs``)."""
    from ddlab.config.bases import load_base
    from ddlab.config.families import DEFAULT_FAMILY, family_named

    if not isinstance(search, dict) or search != family_named(DEFAULT_FAMILY).default_search:
        return search
    family = load_base(base).family
    if family.name == DEFAULT_FAMILY:
        return search
    log.info(f"base {base} is of the {family.name} family: {', '.join(search)} are SGLang's; "
             f"its default search: {family.default_search}")
    return dict(family.default_search)

def _search_options(timeout_s: float, probe: bool) -> SweepOptions:
    """A trial's watch: until ready within ``timeout_s``, probes (and the lossless check)."""
    from ddlab.sweeps.search_plan import TRIAL_GRACE_S

    check_positive(timeout_s=timeout_s)
    return SweepOptions(timeout_s=timeout_s, probe=probe, grace_s=TRIAL_GRACE_S)

def _search(plan, *, dry_run: bool, store: Store | None, run_dir,
            wait_s: float | None = None) -> SearchReport:
    """Run (or only show) a planned search; its report in the place and in ``run_dir``,
    also when it stops on an error or Ctrl-C."""
    from ddlab.sweeps.search_run import run_search
    from ddlab.report.search_report import search_report

    store = store or Store()
    place = VerdictPlace(f"{plan.kind} running: trials below; the answer replaces this line when it ends")
    if dry_run:
        report = search_report(None, store=store, search_id=plan.search_id, kind=plan.kind,
                               status="dry-run", plan=plan.render())
        _keep_search(place, report, run_dir)
        return report
    try:
        run = run_search(plan, store=store, wait_s=wait_s)
    except BaseException as err:
        stopped = isinstance(err, KeyboardInterrupt)
        report = search_report(None, store=store, search_id=plan.search_id, kind=plan.kind,
                               status="interrupted" if stopped else "failed",
                               error="" if stopped else f"{type(err).__name__}: {err}")
        _keep_search(place, report, run_dir)
        if stopped:  # the report goes with the interrupt: the CLI's last line is its JSON
            raise Interrupted(verdict=report) from err
        if isinstance(err, DdlabError):  # and with an error, for the same reason
            err.result = report
        raise
    report = search_report(run, store=store, search_id=run.search_id, kind=plan.kind,
                           status=run.status)
    _keep_search(place, report, run_dir)
    return report

def _keep_search(place: VerdictPlace, report, run_dir) -> None:
    """The answer in the place; in ``run_dir`` the verdict, ``trials.csv`` and the figure."""
    place.update(report)
    record_verdict(report.to_dict(), run_dir)
    if run_dir and Path(run_dir).is_dir() and not report.trials.empty:
        report.trials.to_csv(Path(run_dir) / "trials.csv", index=False)
        report.figure().savefig(Path(run_dir) / "outcome-by-value.png", dpi=110,
                                bbox_inches="tight")
