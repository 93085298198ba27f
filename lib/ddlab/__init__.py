"""ddlab: lab notebooks for debugging speculative-decoding deployments.

Deploy a config variant of an SGLang (DDTree / DFlash) server as a systemd
unit or a plain process, watch it until ready or crashed, capture and classify
the crash, sweep budget x top-k cap x CUDA graphs, plot and report. The
library does the work; notebooks in ``notebooks/`` hold parameters and display.

``import ddlab`` is the API: the names in ``__all__`` come from
:mod:`ddlab.api` (the front door; docs/DESIGN.md lists them), loaded on first
use, so that ``python -m ddlab.target`` (the embedded server) does not pay for
pandas, matplotlib and paramiko at start-up; and the errors a caller catches
(``except ddlab.LockError``), from :mod:`ddlab.core.errors`.
"""

from __future__ import annotations

from ddlab.core.errors import (
    CommandError,
    ConfigError,
    DdlabError,
    HostError,
    HostKeyError,
    Interrupted,
    LockError,
    Preempted,
    ServiceError,
    StateFileError,
    StoreError,
    UnitError,
    UsageError,
)
from ddlab.core.kernel import show_errors_briefly
from ddlab.core.version import __version__

show_errors_briefly((DdlabError,))  # in a kernel: the cell's line and the error, first

# The errors a caller catches (ddlab.core.errors, loaded now: they are light), then the
# jobs, loaded with ddlab.api on first use.
__all__ = ["DdlabError", "ConfigError", "UnitError", "HostError", "HostKeyError", "CommandError",
           "LockError", "Preempted", "ServiceError", "StateFileError", "StoreError", "UsageError",
           "Interrupted", "__version__",
           "plan_deploy", "deploy", "watch", "restore", "sweep", "load_report", "plot",
           "compare_sweeps", "runs", "bisect", "envelope",
           "diagnose", "render_unit", "run_notebook", "notebook_parameters", "check_parameters",
           "demo", "serve_target",
           "accept_length_vs_budget", "throughput_vs_budget", "speedup_vs_budget", "heatmap",
           "pareto", "speedup_vs_concurrency", "explorer", "RESTORE_CHOICES", "DEMO_PARAMETERS", "MAX_CELLS"]


def __getattr__(name: str):
    if name in __all__:  # the errors and __version__ are here already
        from ddlab import api

        return getattr(api, name)
    raise AttributeError(f"module 'ddlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
