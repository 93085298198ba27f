"""CUDA graphs: capture, replay, and the eager runner that shares their copy helpers.

Texts and frames: docs/sglang.md sections 4.2 and 4.3. A replay failure is told
by the *graph runner's* frames, per release: 0.4.x and 0.5.10
``cuda_graph_runner.py`` ``replay`` / ``replay_prepare`` (0.5.10 batches the
copies in ``populate_from_forward_batch`` / ``_grouped_foreach_copy_``), 0.5.14+
``decode_cuda_graph_runner.py`` / ``prefill_cuda_graph_runner.py`` ``execute`` /
``load_batch`` / ``_copy_replay_inputs``, and the plan-time loads of the EAGLE v2
and DFLASH verify (``prepare_for_v2_verify``, ``prepare_for_verify``). Since
0.5.14 the eager runner copies through the same ``fill_from`` /
``_grouped_foreach_copy_``, so those frames alone prove nothing: a traceback
through ``eager_runner.py`` is no graph failure (``forward_input_mismatch``), and
its advice is not "turn graphs off". A traceback a paste truncated between the
runner and those shared copy helpers is read from the log's state
(:func:`copy_reading`): the batch line before the crash says whether the batch
ran on a CUDA graph. An illegal memory access during replay is
kind ``cuda_illegal_access`` (signature ``replay_cuda_error``): the fault is the
kind, the graph is where. tt-metal's trace, a Tenstorrent device's graph capture, failing
to fit its region is a capture's failure too (``tt_trace_region``, vLLM round 68).
"""

from __future__ import annotations

import re

from ddlab.crashes.frames import CAPTURE_PROFILER
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "REPLAY_FRAMES", "EAGER_FRAMES", "CAPTURE_FRAMES", "COPY_HELPERS", "copy_reading",
           "piecewise_reading", "TT_TRACE_REGION", "NPU_CAPTURE_SYNC_TEXT"]

REPLAY_FRAMES = (
    r'cuda_graph_runner\.py", line \d+, in (?:replay\w*|populate_from_forward_batch'
    r"|_grouped_foreach_copy_|execute|load_batch|_copy_replay_inputs)\s*$"
    r"|, in (?:replay_prepare|_copy_replay_inputs|prepare_for_v2_verify|prepare_for_verify)\s*$"
    r"|graph_runner\.(?:replay|execute|load_batch)\("
    # the code line of the copy into a captured graph's static buffers, which a paste keeps when
    # it cuts the frames above it; the eager runner has no such line (0.4.6.post5
    # cuda_graph_runner.py:559, 0.5.23 runner/decode_cuda_graph_runner.py:1914, cpu_graph_runner.py:965)
    r"|^\s*[\w.]*\[:\s*(?:self\.)?raw_num_token\]\.copy_\(")
EAGER_FRAMES = r'eager_runner\.py", line \d+|self\.eager_runner\.execute\('
CAPTURE_FRAMES = (r", in (?:_?capture\w*|init_cuda_graphs|init_device_graphs|init_all_cuda_graphs"
                  r"|capture_cuda_graphs|capture_decode_graph)\s*$|CudaGraphRunner\("
                  # inside a graph runner's constructor, where it captures (0.4.10.post2
                  # cuda_graph_runner.py:387 ``self.capture()`` in ``__init__``)
                  r'|graph_runner\.py", line \d+,? in __init__\s*$'
                  # the profiler callback a graph runner hands torch only around its capture
                  rf"|{CAPTURE_PROFILER}")
_USE_GRAPHS_OFF = "retry with {graphs_off} to confirm the graph is at fault, then"


def smaller_graphs(found: Found) -> str:
    """Smaller decode graphs as a proposal: half the batch size the log shows (16 when it
    shows none), never the size already in use; at 1 already, graphs off."""
    now = found.facts.get("cuda_graph_max_bs_decode") or found.facts.get("cuda_graph_max_bs")
    if not isinstance(now, int) or isinstance(now, bool) or now < 1:
        return "Smaller graphs: `--cuda-graph-max-bs-decode 16`."
    if now == 1:
        return "The graphs are captured at batch size 1 already: keep them off ({graphs_off})."
    return f"Smaller graphs: `--cuda-graph-max-bs-decode {now // 2}` (now {now})."


def more_room_for_graphs(found: Found) -> str:
    """Leave the graphs more memory: a lower ``--mem-fraction-static`` than the log's."""
    now = found.facts.get("mem_fraction_static")
    if isinstance(now, (int, float)) and not isinstance(now, bool) and now > 0.1:
        return (f"More room for them: `--mem-fraction-static {round(now - 0.05, 2):.2f}` "
                f"(now {now:g}).")
    return "More room for them: `--mem-fraction-static 0.8`."


def _capture_detail(found: Found) -> str | None:
    said = [smaller_graphs(found), more_room_for_graphs(found)]
    if regex(r"out of memory|OutOfMemoryError").search(found.text):
        said.append("The capture itself ran out of GPU memory: try both before turning graphs "
                    "off.")
    return " ".join(said)


_BUFFER_FIELDS = ("input_ids", "req_pool_indices", "seq_lens_cpu", "seq_lens", "out_cache_loc_swa",
                  "out_cache_loc", "positions", "num_token_non_padded", "mamba_track_indices",
                  "mamba_track_mask", "mamba_track_seqlens", "mrope_positions", "encoder_lens",
                  "custom_mask", "spec_info")


def _none_field(found: Found) -> str | None:
    fields = "|".join(_BUFFER_FIELDS)
    said = regex(rf"\b({fields})\b\s*(?:=|:|is|==)\s*None\b")
    for text in (*reversed(found.markers), found.text, found.chain_text):
        if match := said.search(text):
            return match[1]
    if regex(r"subscriptable").search(found.text):
        code = regex(rf"forward_batch\.({fields})\b").findall(found.chain_text)
    else:
        code = regex(rf"copy_\(\s*forward_batch\.({fields})\b").findall(found.chain_text)
    return code[-1] if code and regex(r"NoneType").search(found.text) else None


def _replay_none_detail(found: Found) -> str | None:
    name = _none_field(found)
    if name:
        return f"The evidence names forward_batch.{name} as None when the graph's inputs are copied."
    return ("The traceback does not name the field: log which of input_ids, req_pool_indices, "
            "seq_lens, out_cache_loc, positions (and num_token_non_padded, out_cache_loc_swa, "
            "the mamba track fields, mrope_positions) is None before the replay copies them.")


def _sizes_detail(found: Found) -> str | None:
    sizes = None
    for pattern in (r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)",
                    r"Expected size (\d+) but got size (\d+)", r"expected (\d+) but got (\d+)",
                    r"shape \[(\d+)\] doesn't match the broadcast shape \[(\d+)\]"):
        if sizes := regex(pattern).search(found.text):
            break
    budget = found.facts.get("tree_budget") or found.facts.get("speculative_ddtree_budget")
    parts = [f"The copy saw sizes {sizes[1]} and {sizes[2]}." if sizes else None]
    if isinstance(budget, int) and (found.algorithm or "").upper() == "DDTREE":
        parts.append(f"Here tree_budget={budget}: the verify batch holds {budget + 1} tokens per request.")
    return " ".join(p for p in parts if p) or None


_SIZE_TEXTS = (r"size of tensor a \(\d+\) must match the size of tensor b",
               r"doesn't match the broadcast shape", r"Expected size \d+ but got size \d+",
               r"shape mismatch|size mismatch|sizes? (?:do not|don't) match",
               r"Tensor lists must have the same number",
               r"shape '\[[^\]]*\]' is invalid for input of size", r"out of bounds for dimension",
               # (round 95) torch's expand (a slice assigned a tensor of another length), ATen ExpandUtils.cpp
               r"The expanded size of the tensor \(\d+\) must match the existing size \(\d+\)")
_DDTREE_WIDTH = ("ddtree", "DDTree's verify batch holds budget+1 tokens per request, not the "
                           "block size: every buffer the verify path fills must be sized for that.")

# The CUDA runtime's stream-capture errors (cudaErrorStreamCaptureUnsupported 900 ...
# cudaErrorStreamCaptureWrongThread 908), in cudaGetErrorString's words, which HIP returns too
# (ROCm/clr hipamd/src/hip_error.cpp, ihipGetErrorString): only a capture in progress meets
# them. torch prints them as "CUDA error: ..." ("HIP error: ..." on ROCm), also on its own line
# under the NCCL watchdog's "Process group watchdog thread terminated with exception:".
_CAPTURE_ERRORS = ("operation not permitted when stream is capturing",
                   "operation failed due to a previous error during capture",
                   "operation would result in a merge of separate capture sequences",
                   "capture was not ended in the same stream as it began",
                   "capturing stream has unjoined work",
                   "dependency created on uncaptured work in another stream",
                   "operation would make the legacy stream depend on a capturing blocking stream",
                   "operation not permitted on an event last recorded in a capturing stream",
                   "attempt to terminate a thread-local capture sequence from another thread")
_CAPTURE_ERROR_LINE = rf"\b(?:CUDA|HIP) error: (?:{'|'.join(_CAPTURE_ERRORS)})"
# (round 87) CANN's runtime refusing a sync of the stream an ACL graph is capturing, the NPU's form of the
# first (hicann/runtime da678a9 src/runtime/feature/src/api_impl/api_error.cc:1038 "Not allow to synchronize
# captured-stream, stream_id=%d.", error 107027 ACL_ERROR_RT_STREAM_CAPTURED), in whatever server's log; spelled
# once here: vLLM's Ascend reading (ddlab.vllm_crashes.ascend.NPU_CAPTURE_SYNC) takes it from here
NPU_CAPTURE_SYNC_TEXT = r"\bNot allow to synchronize captured-stream\b"

CAPTURE_FAILED = Signature(
    "capture_failed", "cuda_graph_capture", "CUDA graph capture failed",
    (f"Graph capture failed: {_USE_GRAPHS_OFF} capture smaller graphs or leave them more "
     "memory; `--enable-torch-compile` (if set) is the next suspect.",),
    patterns=(r"Capture\b[\w\s-]{0,40}?\bcuda ?graph failed", *_CAPTURE_ERRORS,
              r"cudaErrorStreamCapture\w+", r"(?:cuda|hip)ErrorCapturedEvent",
              r"stream capture (?:invalidated|unsupported)",
              r"(?:during|while) (?:CUDA )?graph capture",
              r"operation failed due to a previous error during capture", NPU_CAPTURE_SYNC_TEXT),
    # the "Possible solutions" list the capture wrapper appends to its message, which a paste
    # cut above it still shows: graph off and torch compile off are advised nowhere else
    # (0.4.3.post2 cuda_graph_runner.py:242, 0.4.6 cuda_graph_runner.py:283-284, 0.4.10.post2
    # cuda_graph_runner.py:837-838, 0.5.10 cuda_graph_runner.py:1234-1235, 0.5.23
    # runner_backend_utils/__init__.py:18, cpu_graph_runner.py:1077)
    lines=(r"Capture\b[\w\s-]{0,40}?\bcuda ?graph failed", _CAPTURE_ERROR_LINE, NPU_CAPTURE_SYNC_TEXT,
           r"^\d\. disable (?:decode )?cuda graph by --(?:disable-cuda-graph\b|cuda-graph-backend-decode=disabled)",
           r"^\d\. disable torch compile by not using --enable-torch-compile"),
    priority=80, phase="graph_capture", detail=_capture_detail, by_algorithm=(_DDTREE_WIDTH,),
    sources=(("0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py:390"),
             ("0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py:838"),
             ("0.5.10", "sglang/srt/model_executor/cuda_graph_runner.py:1235"),
             ("0.5.23", "sglang/srt/model_executor/runner_backend_utils/__init__.py:18"),
             ("0.4.10.post2", "sglang/srt/speculative/eagle_draft_cuda_graph_runner.py:139"),
             ("0.5.10", "sglang/srt/model_executor/cuda_graph_runner.py:656"),
             ("0.5.14", "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py:356"),
             ("0.5.18", "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py:464"),
             ("0.5.20", "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py:467"),
             ("0.5.23", "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py:603"),
             ("0.5.23", "sglang/srt/speculative/eagle_draft_cuda_graph_runner.py:297"),
             ("CUDA runtime", "cudaErrorStreamCaptureUnsupported (900) ... cudaErrorCapturedEvent (907), "
                              "cudaErrorStreamCaptureWrongThread (908)"),
             ("ROCm clr 6.2.2 (rocm-6.2.2)", "hipamd/src/hip_error.cpp:205 (ihipGetErrorString: the same "
                                             "texts for HIP, :328 ... :342, :344)"),
             ("CANN runtime (hicann/runtime da678a9)", "src/runtime/feature/src/api_impl/api_error.cc:1038")))

# A graph runner's constructor captures inside ``try: ... self.capture()`` and re-raises a
# RuntimeError as "Capture cuda graph failed: ..." (0.3.6 cuda_graph_runner.py:182-187, 0.4.0
# :191-196, 0.4.10.post2 :385-390, 0.5.1 :382-388); the scheduler logs
# ``traceback.format_exception`` of what it caught (0.4.0 managers/scheduler.py:1497-1499,
# utils.py:28-31), a chained exception's cause first, its traceback starting at the
# constructor's frame. A traceback in which a caller's frame comes
# right before the constructor's ``self.capture()`` is an error that went through the wrapper
# uncaught (not a RuntimeError): cut before its exception line, it names nothing of the capture.
_ESCAPED_WRAPPER = (r'^\s*File "[^"\n]*", line \d+, in \w+\s*\n(?:[ \t]+\S[^\n]*\n){1,2}'
                    r'\s*File "[^"\n]*graph_runner\.py", line \d+,? in __init__\s*\n\s*self\.capture\(\)')

# (round 111) not an import the capture's code makes: the import system raises ImportError (ModuleNotFoundError) before
# anything is captured (0.5.16 speculative/eagle_worker_v2.py:442, a lazy import of the DSA backend in the draft's
# _capture_cuda_graphs, down to jit_kernel/dsa/cutedsl_paged_mqa_logits.py:15 `import cutlass`, a package the wheel
# requires, METADATA:243 nvidia-cutlass-dsl): the install lacks a package, packages.py's import_error
_NOT_IMPORT = r"(?!(?:ModuleNotFound|Import)Error$)"
CAPTURE_ERROR = Signature(
    "capture_error", "cuda_graph_capture", "an error inside CUDA graph capture",
    (f"An error was raised while capturing: {_USE_GRAPHS_OFF} capture smaller graphs "
     "and check that the attention backend and the speculative "
     "worker support graph capture.",),
    patterns=(r".",), types=rf"(?:\w+\.)*{_NOT_IMPORT}(?:RuntimeError|\w*Error)",
    context=(CAPTURE_FRAMES,), absent=(EAGER_FRAMES,), priority=55, phase="graph_capture",
    detail=lambda found: smaller_graphs(found), by_algorithm=(_DDTREE_WIDTH,),
    # a traceback cut before its exception line inside the capture: the capture failed, unless
    # the error went through the wrapper's frame uncaught (_ESCAPED_WRAPPER)
    cut_ok=True, cut_absent=(_ESCAPED_WRAPPER,),
    sources=(("0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py:384"),
             ("0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py:388"),
             ("0.5.23", "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py:599")))

REPLAY_NONE = Signature(
    "replay_none", "cuda_graph_replay", "CUDA graph replay got a None input",
    ("A forward-batch field was None when the graph runner copied it into the captured "
     "buffers: retry with {graphs_off} to keep serving, and find which field the speculative "
     "worker leaves unset.",),
    types=r"(?:\w+\.)*(?:TypeError|AttributeError)", patterns=(r"NoneType",),
    context=(REPLAY_FRAMES,), absent=(EAGER_FRAMES,), priority=76, phase="serving",
    detail=_replay_none_detail,
    sources=(("0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py:725"),
             ("0.5.10", "sglang/srt/model_executor/cuda_graph_runner.py:111"),
             ("0.5.23", "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py:1916")))

REPLAY_SIZE = Signature(
    "replay_size", "cuda_graph_replay", "CUDA graph replay got a batch of the wrong size",
    ("The batch does not fit the buffers the graph was captured with (more tokens per request "
     "than captured): retry with {graphs_off} to keep serving, then size the captured graph for "
     "the verify batch the speculative worker sends.",),
    patterns=_SIZE_TEXTS, context=(REPLAY_FRAMES,), absent=(EAGER_FRAMES,), priority=75,
    phase="serving", detail=_sizes_detail, by_algorithm=(_DDTREE_WIDTH,),
    sources=(("0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py:698"),
             ("0.5.10", "sglang/srt/model_executor/cuda_graph_runner.py:1068"),
             ("0.5.14", "sglang/srt/model_executor/cuda_graph_buffer_registry.py:44"),
             ("0.5.10", "sglang/srt/speculative/eagle_info_v2.py:261"),
             ("sglang 0.4.4.post1", "sglang/srt/layers/attention/flashinfer_mla_backend.py:293"),
             ("0.5.23", "sglang/srt/model_executor/cuda_graph_buffer_registry.py:48")))

REPLAY_PLAN = Signature(
    "replay_plan", "cuda_graph_replay", "the attention backend's plan step failed inside CUDA graph replay",
    ("Before each replay the attention backend plans the batch into the buffers the graph was "
     "captured with (`init_forward_metadata_replay_cuda_graph`); its kernel library refused this "
     "batch's layout (index pointers, lengths). Retry with {graphs_off} to keep serving; if that "
     "serves, the batch the speculative worker sends does not have the shape the graph was "
     "captured for (tokens per request, batch size).",),
    patterns=(r".",),
    context=(REPLAY_FRAMES, r", in init_forward_metadata_replay_cuda_graph\s*$",
             r", in (?:plan|fast_decode_plan|begin_forward|call_begin_forward|\w*_plan)\s*$"),
    absent=(EAGER_FRAMES,), priority=73, phase="serving", by_algorithm=(_DDTREE_WIDTH,),
    sources=(("0.4.10.post2", "sglang/srt/model_executor/cuda_graph_runner.py:760"),
             ("0.5.10", "sglang/srt/model_executor/cuda_graph_runner.py:1122"),
             ("0.5.10", "sglang/srt/layers/attention/flashinfer_backend.py:691"),
             ("flashinfer 0.6.7.post2", "include/flashinfer/attention/scheduler.cuh:513 "
                                        "(qo_indptr[i+1] - qo_indptr[i] should be non-negative)"),
             ("apache-tvm-ffi 0.1.15", "include/tvm/ffi/function.h:87 (a C++ exception becomes "
                                       "an InternalError)")))

PIECEWISE_FAILED = Signature(
    "piecewise_graph_failed", "cuda_graph_replay", "the piecewise CUDA graph failed",
    ("The piecewise (prefill) CUDA graph did not accept this batch: turn it off with "
     "{prefill_graphs_off} and report the shape it names.",),
    patterns=(r"Piecewise CUDA Graph failed with error",),
    lines=(r"Piecewise CUDA Graph failed with error",),
    priority=74, phase="serving",
    sources=(("0.5.10", "sglang/srt/compilation/piecewise_context_manager.py:49"),))

# the same message is logged when the piecewise graphs are compiled and captured at startup
# (0.5.10 piecewise_cuda_graph_runner.py:279, in the runner's __init__) and when one is replayed
# (:760): frames of a server still starting make it a capture failure (piecewise_reading)
PIECEWISE_CAPTURE = Signature(
    "piecewise_capture_failed", "cuda_graph_capture", "capturing the piecewise CUDA graphs failed",
    ("The piecewise (prefill) CUDA graphs failed while they were compiled and captured at startup: "
     "turn them off with {prefill_graphs_off} to start, and report the error it names.",),
    # the same texts; it ranks below PIECEWISE_FAILED, so only piecewise_reading names it
    patterns=PIECEWISE_FAILED.patterns, lines=PIECEWISE_FAILED.lines,
    priority=PIECEWISE_FAILED.priority - 1, phase="graph_capture",
    sources=(("0.5.10", "sglang/srt/compilation/piecewise_context_manager.py:49"),
             ("0.5.10", "sglang/srt/model_executor/piecewise_cuda_graph_runner.py:279")))

EAGER_INPUT = Signature(
    "eager_input_mismatch", "forward_input_mismatch",
    "the eager runner got inputs that disagree in size (no CUDA graph involved)",
    ("The eager runner copies the batch into its own fixed buffers; the batch's fields disagree "
     "in size (or one is None), so the speculative worker built an inconsistent verify batch. "
     "Graphs are not involved here: turning them off will not help. Compare the sizes in the "
     "message with the tokens per request the worker sends.",),
    patterns=(*_SIZE_TEXTS, r"NoneType"),
    context=(EAGER_FRAMES, r", in (?:fill_from|_grouped_foreach_copy_|_foreach_copy|load_batch)\s*$"),
    priority=77, phase="serving", detail=_sizes_detail, by_algorithm=(_DDTREE_WIDTH,),
    sources=(("0.5.14", "sglang/srt/model_executor/runner/eager_runner.py:174"),
             ("0.5.18", "sglang/srt/model_executor/runner/eager_runner.py:190"),
             ("0.5.20", "sglang/srt/model_executor/runner/eager_runner.py:199"),
             ("0.5.23", "sglang/srt/model_executor/runner/eager_runner.py:196"),
             ("0.5.23", "sglang/srt/model_executor/cuda_graph_buffer_registry.py:512")))

# (vLLM round 68) tt-metal's trace is its graph capture: begin_trace_capture records the commands of the ops that run
# until end_trace_capture, which writes them to a trace buffer in the device's trace region (trace_region_size,
# a device-open parameter) and fails a TT_FATAL where the buffers outgrow it ("Creating trace buffers of size
# {}B on MeshDevice {}, but only {}B is allocated for trace region.", "device {}" in the older single-device
# path; tenstorrent/tt-metal 00a6e7f tt_metal/distributed/mesh_trace.cpp, MeshTrace::populate_mesh_buffer).
# TT_FATAL logs its message at critical ("(assert.hpp:N)") and throws: the capture failed
_TT_TRACE_REGION = (r"\bCreating trace buffers of size \d+B on (?:MeshDevice|device) \d+, but only \d+B is "
                    r"allocated for trace region\b")
TT_TRACE_REGION = Signature(
    "tt_trace_region", "cuda_graph_capture",
    "a Tenstorrent trace outgrew the device's trace region (tt-metal's capture)",
    ("tt-metal captured the model's trace (its graph capture) and the trace's buffers are larger than the "
     "trace region the device was opened with: raise `trace_region_size` in the parameters the device is "
     "opened with to at least the size the line gives, or capture fewer or smaller traces.",),
    patterns=(_TT_TRACE_REGION,), lines=(_TT_TRACE_REGION,), priority=60, fatal=True, phase="graph_capture",
    sources=(("tt-metal 00a6e7f", "tt_metal/distributed/mesh_trace.cpp (MeshTrace::populate_mesh_buffer: "
                                  "TT_FATAL(get_trace_buffers_size() <= trace_region_size, \"Creating trace "
                                  "buffers of size {}B on MeshDevice {}, but only {}B is allocated for trace "
                                  "region.\"))"),))

SIGNATURES = [CAPTURE_FAILED, CAPTURE_ERROR, REPLAY_NONE, REPLAY_SIZE, REPLAY_PLAN, PIECEWISE_FAILED,
              PIECEWISE_CAPTURE, EAGER_INPUT, TT_TRACE_REGION]


def piecewise_reading(signature: Signature | None, startup: bool) -> Signature | None:
    """"Piecewise CUDA Graph failed" among frames of a server still starting (the scheduler's
    constructor), or logged with no frames where the log's last phase is the graph capture (the
    wrapper logs it and re-raises, 0.5.12 compilation/piecewise_context_manager.py:47-53, after
    "Capture piecewise CUDA graph begin", model_runner.py:3077, and before "ready to roll"): the
    capture at startup, not a replay."""
    return PIECEWISE_CAPTURE if signature is PIECEWISE_FAILED and startup else signature

# The copy helpers the graph runners and (0.5.14+) the eager runner share: a traceback
# truncated between the runner and these frames does not say which runner copied.
COPY_HELPERS = (r'cuda_graph_buffer_registry\.py", line \d+, in \w+'
                r"|, in (?:fill_from|_grouped_foreach_copy_|_foreach_copy|populate_from_forward_batch)\s*$")


def copy_reading(text: str, chain_text: str, on_graph: bool | None) -> Signature | None:
    """A size mismatch or a None in the shared copy helpers, with the runner's frame lost from
    the paste: the batch ran on a CUDA graph (the batch line before it says ``cuda graph:
    True``, or graphs were captured and no batch line says) -> the replay's signature; ran
    eagerly -> the eager runner's; not known -> None."""
    if on_graph is None or not regex(COPY_HELPERS, re.M).search(chain_text):
        return None
    if regex(EAGER_FRAMES, re.M).search(chain_text) or regex(REPLAY_FRAMES, re.M).search(chain_text):
        return None  # a runner frame is there: its own signature decided already
    sized = any(regex(p).search(text) for p in _SIZE_TEXTS)
    if not sized and not regex(r"NoneType").search(text):
        return None
    if not on_graph:
        return EAGER_INPUT
    return REPLAY_SIZE if sized else REPLAY_NONE
