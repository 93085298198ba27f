"""ddlab's front door: every job a person runs, for notebooks and the CLI alike.

``import ddlab`` gives these functions (``ddlab/__init__.py`` re-exports
``__all__``, loading this package on first use); each notebook calls them and
nothing deeper, and each ``ddlab`` CLI verb is one call of the same function
(docs/DESIGN.md has the table). They live by verb family:

- :mod:`.deploy_verbs`: ``plan_deploy``, ``deploy``, ``watch``, ``restore``: one
  variant on one host;
- :mod:`.sweep_verbs`: ``sweep``, ``load_report``, ``plot``, ``compare_sweeps``,
  ``runs``: grids of variants and what they left;
- :mod:`.search_verbs`: ``bisect``, ``envelope``: searches, each trial a sweep cell;
- :mod:`.tool_verbs`: ``diagnose``, ``render_unit``, ``run_notebook`` and its
  parameters, ``serve_target``, ``demo``;
- the plot functions (:mod:`ddlab.report.plots`) take a sweep's frame and return a
  Figure; they load with matplotlib, on first use.

In a notebook the verdict is displayed first, in a place that fills when the job
ends, with the live heartbeat below it. Given ``run_dir`` (papermill injects it
under ``ddlab run``), a job leaves its verdict (``verdict.json``) there.
"""

from __future__ import annotations

import importlib

__all__ = ["plan_deploy", "deploy", "watch", "restore", "sweep", "load_report", "plot",
           "compare_sweeps", "runs", "bisect", "envelope",
           "diagnose", "render_unit", "run_notebook", "notebook_parameters", "check_parameters",
           "demo", "serve_target",
           "accept_length_vs_budget", "throughput_vs_budget", "speedup_vs_budget", "heatmap",
           "pareto", "speedup_vs_concurrency", "explorer", "RESTORE_CHOICES", "DEMO_PARAMETERS", "MAX_CELLS"]

# Each job's module, imported on first use: a CLI verb loads its own family only (`ddlab
# deploy` does not pay for pandas; `ddlab --help` for none of them).
_HOMES = {
    "ddlab.api.deploy_verbs": ("plan_deploy", "deploy", "watch", "restore"),
    "ddlab.api.sweep_verbs": ("sweep", "load_report", "plot", "compare_sweeps", "runs", "MAX_CELLS"),
    "ddlab.api.search_verbs": ("bisect", "envelope"),
    "ddlab.api.tool_verbs": ("diagnose", "render_unit", "run_notebook", "notebook_parameters",
                             "check_parameters", "demo", "serve_target", "DEMO_PARAMETERS"),
    "ddlab.api.common": ("RESTORE_CHOICES",),
    # figures of a sweep's frame (a workload sweep's report.levels): with matplotlib
    "ddlab.report.workload_plots": ("pareto", "speedup_vs_concurrency"),
    "ddlab.report.plots": ("accept_length_vs_budget", "throughput_vs_budget", "speedup_vs_budget",
                           "heatmap", "explorer"),
}
HOME = {name: module for module, names in _HOMES.items() for name in names}
WORKLOAD_PLOTS = _HOMES["ddlab.report.workload_plots"]
PLOTS = (*_HOMES["ddlab.report.plots"], *WORKLOAD_PLOTS)


def __getattr__(name: str):
    if name in HOME:
        value = getattr(importlib.import_module(HOME[name]), name)
        globals()[name] = value  # the next use does not come here
        return value
    raise AttributeError(f"module 'ddlab.api' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
