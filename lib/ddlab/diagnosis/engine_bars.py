"""Several engines' progress bars in one log: a startup is only as far as its slowest engine (round 108).

Contract: :func:`slowest_engine` takes the lines and the startup phase :func:`~ddlab.diagnosis.logtext.phase_reached`
found (and its line), and lowers a phase past loading and before the HTTP server to ``load_weights`` where a
checkpoint-shard bar stands unfinished while a capture bar stands unfinished, and no later bar shows that engine
past its load (its shards complete, or a capture bar begun at 0).

Why: one engine loads its weights, then sizes its pool, then captures its graphs, in that order (sglang 0.4.6
model_executor/model_runner.py:194, :214, :222), and a drafter is built only after its target's worker is (0.4.6
managers/scheduler.py:261, :273), so its shard bar follows a finished capture bar. A shard bar that opens while a
capture bar is mid-way is another engine's: verl builds one SGLang engine per tensor-parallel group, launched by the
group's first rank while the others wait at the group's barrier (verl 76084d36 workers/rollout/sglang_rollout/
sglang_rollout.py:182-186; sglang 0.4.6 entrypoints/verl_engine.py:51-53, :65), and Ray prints every worker's bars
into one log. The engine still loading is where the startup stands, as the slowest stamped rank is
(:func:`~ddlab.diagnosis.logtext.phase_reached`): the bars name no rank, their counts tell the engines apart.
"""

from __future__ import annotations

import re

from ddlab.diagnosis.logtext import PHASES, Line

__all__ = ["slowest_engine"]

# the loader's shard bar, "Loading safetensors checkpoint shards:  25% Completed | 1/4 [...]" (0.4.6
# model_loader/weight_utils.py:438, its pt twin :456), and the graph runner's, "Capturing batches (avail_mem=6.28
# GB):   4%|| | 1/23 [...]" (0.4.6 model_executor/cuda_graph_runner.py:336, :348)
_SHARDS_RE = re.compile(r"Loading (?:safetensors|pt) checkpoint shards:\s*\d+% Completed \| (\d+)/(\d+)")
_CAPTURE_RE = re.compile(r"Capturing batches \([^)]*\):\s*\d+%\|[^\[]*?\|\s*(\d+)/(\d+) \[")


def _counts(pattern: re.Pattern, msg: str) -> tuple[int, int] | None:
    bar = pattern.search(msg)
    return (int(bar[1]), int(bar[2])) if bar else None


def _behind(lines: list[Line]) -> Line | None:
    """The shard bar of an engine still loading while another captures (None where every engine caught up)."""
    capturing, behind = False, None
    for line in lines:
        if capture := _counts(_CAPTURE_RE, line.msg):
            if capture[0] == 0:  # an engine begins its capture: the one behind, if one was
                behind = None
            capturing = capture[0] < capture[1]
        elif shards := _counts(_SHARDS_RE, line.msg):
            if shards[0] == shards[1]:
                behind = None
            elif capturing and behind is None:
                behind = line
    return behind


def slowest_engine(lines: list[Line], phase: str, at: Line | None) -> tuple[str, Line | None]:
    """The startup phase and its line, lowered to an engine still loading (see the module docstring)."""
    if not PHASES.index("load_weights") < PHASES.index(phase) < PHASES.index("ready"):
        return phase, at
    behind = _behind(lines)
    return ("load_weights", behind) if behind is not None else (phase, at)
