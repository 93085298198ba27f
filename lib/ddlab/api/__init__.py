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

from ddlab.api.deploy_verbs import RESTORE_CHOICES, deploy, plan_deploy, restore, watch
from ddlab.api.search_verbs import bisect, envelope
from ddlab.api.sweep_verbs import MAX_CELLS, compare_sweeps, load_report, plot, runs, sweep
from ddlab.api.tool_verbs import (
    DEMO_PARAMETERS,
    check_parameters,
    demo,
    diagnose,
    notebook_parameters,
    render_unit,
    run_notebook,
    serve_target,
)

__all__ = ["plan_deploy", "deploy", "watch", "restore", "sweep", "load_report", "plot",
           "compare_sweeps", "runs", "bisect", "envelope",
           "diagnose", "render_unit", "run_notebook", "notebook_parameters", "check_parameters",
           "demo", "serve_target",
           "accept_length_vs_budget", "throughput_vs_budget", "speedup_vs_budget", "heatmap",
           "pareto", "speedup_vs_concurrency", "explorer", "RESTORE_CHOICES", "DEMO_PARAMETERS", "MAX_CELLS"]

# Figures of a sweep's frame (ddlab.report.plots): loaded on first use, with matplotlib.
WORKLOAD_PLOTS = ("pareto", "speedup_vs_concurrency")  # of a workload sweep's report.levels
PLOTS = ("accept_length_vs_budget", "throughput_vs_budget", "speedup_vs_budget", "heatmap",
         "explorer", *WORKLOAD_PLOTS)


def __getattr__(name: str):
    if name in WORKLOAD_PLOTS:
        from ddlab.report import workload_plots

        return getattr(workload_plots, name)
    if name in PLOTS:
        from ddlab.report import plots

        return getattr(plots, name)
    raise AttributeError(f"module 'ddlab.api' has no attribute {name!r}")
