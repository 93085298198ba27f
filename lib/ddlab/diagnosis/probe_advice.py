"""Which ``--probe-fn`` (ddlab deploy) to suggest for a graph crash whose traceback names no field.

A replay or capture crash in the field said nothing of which forward-batch
field was None; a probe (:mod:`ddlab.probes`) on the innermost server method on
that path logs every argument's fields when it raises. :func:`probe_target`
reads that method off the traceback's frames.
"""

from __future__ import annotations

import re

__all__ = ["PROBE_KINDS", "probe_target", "skip_path_probe"]

# Crashes whose traceback names no field: a probe on the verify path says which is None.
PROBE_KINDS = ("cuda_graph_replay", "cuda_graph_capture")
_SERVER_CODE = re.compile(r"/((?:sglang|ddlab/target)/[\w/]+)\.py$")


def probe_target(frames) -> str | None:
    """The ``--probe-fn`` for a traceback, as module.Class.method: the innermost server method
    the forward batch was passed to (its caller's code line hands it ``forward_batch``: the
    replay path); failing that, the innermost method a graph runner called on itself
    (``self.capture_one_shape(`` in the same file: the capture path, whose calls carry no
    batch). The class is the file's, SGLang's naming (``decode_cuda_graph_runner.py`` holds
    ``DecodeCudaGraphRunner``). None when no frame qualifies."""
    pairs = list(zip(frames, frames[1:]))
    for caller, frame in reversed(pairs):
        where = _SERVER_CODE.search(frame.file.replace("\\", "/"))
        if where and "forward_batch" in caller.code and "self." in caller.code:
            return _method_path(where.group(1), frame.func)
    for caller, frame in reversed(pairs):
        where = _SERVER_CODE.search(frame.file.replace("\\", "/"))
        if (where and "graph_runner" in where.group(1) and caller.file == frame.file
                and f"self.{frame.func}(" in caller.code):
            return _method_path(where.group(1), frame.func)
    return None


def _method_path(path: str, func: str) -> str:
    module = path.replace("/", ".")
    owner = "".join(part.capitalize() for part in module.rsplit(".", 1)[-1].split("_"))
    return f"{module}.{owner}.{func}"


def skip_path_probe(module: str, version: str | None) -> str:
    """The ``--probe-fn`` that sees a graph replay's verify batch where it is copied into
    the buffers, for a server that gives WRONG OUTPUT instead of crashing (0.5.23's
    ``fill_from`` skips a None field, so nothing raises and an error-mode probe never
    fires): first=3, which records each call's fields as it begins. ``module``: the
    server's (``ddlab.target`` names the target's own copy of SGLang's files);
    ``version``: the SGLang generation its log speaks (before 0.5.14: ``replay_prepare``)."""
    package = "ddlab.target" if module.split(".")[0] == "ddlab" else "sglang.srt.model_executor"
    older = bool(version) and tuple(int(p) for p in re.findall(r"\d+", version)[:3]) < (0, 5, 14)
    if older:
        return f"{package}.cuda_graph_runner.CudaGraphRunner.replay_prepare:first=3"
    return f"{package}.runner.decode_cuda_graph_runner.DecodeCudaGraphRunner.fill_from:first=3"
