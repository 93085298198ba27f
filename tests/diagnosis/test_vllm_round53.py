"""What held-out round 53 of the vLLM corpus (w5301-w5320, measured once at 70261c4 with its logs ee06dc6)
showed: crashed 16/20, kind 14/20, phase 9/9. Its six misses were read from the source (docs/diagnosis.md,
"Held-out round 53"):

- w5309, w5316: vLLM's WARNING "Failed to import from vllm._C with ImportError('..._C.abi3.so: undefined symbol:
  ...')" and nothing after it that fails. vLLM imports its compiled ops in a try/except that logs the warning and
  carries on (0.5.0 _custom_ops.py:6-11, the line w5309 names; 0.9.2 :16-20, the line w5316 names; 0.34.0
  platforms/interface.py:379-382). ``vllm_c_extension_link`` reads that line as a warning (``explains``), but the
  generic ``vllm_dependency_mismatch`` also reads its ".so: undefined symbol: " and made it the crash. Fixed: a
  line an ``explains`` signature reads is that warning, whatever else a text in it matches (the contract of
  ``explains``, crashes/signature.py: "such a line never decides alone, whatever its severity";
  diagnosis/rootcause.py ``_line_candidate``): not crashed. The same undefined symbol raised as an ImportError
  that ends the process stays dependency_mismatch, and the warning still explains a traceback cut after it.
- w5310: V0's engine process logging "HIP error: invalid argument" and HIP's hints at ERROR under the stamp
  "engine.py:366]", the log cut there. That line is run_mp_engine's ``logger.exception(e)``, which re-raises
  (0.6.4.post1 engine/multiprocessing/engine.py:365-368): the engine process died, its traceback cut. Fixed:
  a log whose last record is that record at ERROR (the stamp naming run_mp_engine's line in a release) is a
  traceback cut at its message (diagnosis/vllm_records.py ``_ENGINE_RECORD_RE``), as round 49's announced
  worker failure is: crashed, unknown.
- w5307: V0's async engine loop's ``asyncio.wait_for`` of a step raising asyncio's TimeoutError, handed to a
  request's stream (LLaMA-Factory's API). The loop's wait is the engine iteration timeout: it marks the engine
  errored and re-raises (0.4.0.post1 engine/async_llm_engine.py:478-486), the loop task ends and
  _raise_exception_on_finish hands the error to every request (:30-46, error_callback -> propagate_exception);
  a later request meets "Background loop has errored already" (:389-392). Fixed: ``vllm_engine_loop_timeout``
  (vllm_crashes/engine.py), an echo of the engine's stall (fatal): hang at serving, as
  ``vllm_iteration_timeout`` reads the logged line.
- w5317: a V1 worker's traceback cut at torch.cuda.graph's ``__exit__`` calling ``self.cuda_graph.capture_end()``
  under vLLM's ``with torch.cuda.graph(cudagraph, pool=self.graph_pool):`` (0.8.5.post1 compilation/backends.py:681).
  torch.cuda.graph's ``__enter__`` begins the capture and its ``__exit__`` ends it (torch 2.13.0
  cuda/graphs.py:437-477): cut there, the capture failed. Fixed: those two frames of torch/cuda/graphs.py are
  capture frames of ``vllm_capture_cut`` (vllm_crashes/graphs.py ``_CAPTURE_FRAMES``): cuda_graph_capture.
- w5308: left a miss (see the docs): a V0 traceback cut in LLMEngine's constructor after "# GPU blocks: 229"
  with max_seq_len=4096; the block size is not in the log (0.2.7 llm_engine.py:70-85), so the figures alone do
  not say the size check (:282-284) raised.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import pytest

from fieldkit import (KNOWN_MISSES, VLLM_MANIFEST, VLLM_WHEELS, not_unpacked, read_log, reads, vllm_signature,
                      vllm_traceback, wheel_text_test)

_MANIFEST = VLLM_MANIFEST
_ROUND = [f"w53{n:02d}" for n in range(1, 21)]


def test_the_round_is_folded_with_its_twenty_logs():
    round53 = sorted(log_id for log_id, log in _MANIFEST.items() if log.get("heldout_round") == 53)
    assert round53 == _ROUND
    assert all(_MANIFEST[log_id]["split"] == "work" for log_id in round53)


def test_each_log_reads_as_labelled_but_w5308():
    """Crashed and kind as labelled, the phase where the log shows it; w5308's kind is the round's one miss
    left (known_misses.json)."""
    assert {log_id: KNOWN_MISSES["vllm-real"][log_id] for log_id in _ROUND
            if log_id in KNOWN_MISSES["vllm-real"]} == {"w5308": ["kind"]}
    for log_id in _ROUND:
        log = _MANIFEST[log_id]
        got = reads(read_log(f"{log_id}.log"))
        kind = got[1] if got[0] or got[1] == "request_error" else None
        assert got[0] == log["crashed"], (log_id, got)
        if log_id != "w5308":
            assert kind == log["kind"], (log_id, got)
        if log["phase_in_log"]:
            assert got[2] == log["phase"], (log_id, got)


# --- w5309, w5316: the warning of vllm._C's failed import, alone ---------------------------------------------

_SYMBOL = "undefined symbol: _ZN3c108ListType3getERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
_WARNED = ("WARNING 06-13 11:42:20 _custom_ops.py:11] Failed to import from vllm._C with ImportError("
           f"'/usr/lib/python3.10/site-packages/vllm/_C.abi3.so: {_SYMBOL}')\n")


def test_the_warning_alone_is_no_crash():
    """The corpus logs: the warning alone (w5309), and after the platform plugin's lines (w5316)."""
    for log_id in ("w5309", "w5316"):
        assert reads(read_log(f"{log_id}.log"))[0] is False, log_id


def test_the_same_warning_in_other_forms():
    """0.34.0's spelling (``import_kernels``: "Failed to import from vllm._C: %s", repr(e)) under a process tag,
    and 0.9.2's, followed by a startup that goes on: no crash."""
    newer = ("(APIServer pid=7) WARNING 12-03 10:00:00 [interface.py:382] Failed to import from vllm._C: "
             f"ImportError('/opt/venv/lib/python3.12/site-packages/vllm/_C.abi3.so: {_SYMBOL}')\n")
    assert reads(newer)[0] is False
    older = ("WARNING 07-18 09:55:29 [_custom_ops.py:20] Failed to import from vllm._C with ImportError("
             f"'/root/venv/lib/python3.11/site-packages/vllm/_C.abi3.so: {_SYMBOL}')\n"
             "INFO 07-18 09:55:31 [api_server.py:1395] vLLM API server version 0.9.2\n")
    assert reads(older)[0] is False


def test_the_symbol_raised_or_a_cut_traceback_after_the_warning_stays_a_crash():
    """The same undefined symbol raised as an ImportError that ends the process is dependency_mismatch; the
    warning still explains a traceback the process cuts right after it (vllm_c_extension_link)."""
    raised = ("Traceback (most recent call last):\n"
              '  File "/usr/lib/python3.10/site-packages/vllm/_custom_ops.py", line 7, in <module>\n'
              "    import vllm._C\n"
              f"ImportError: /usr/lib/python3.10/site-packages/vllm/_C.abi3.so: {_SYMBOL}\n")
    assert reads(raised)[:2] == (True, "dependency_mismatch")
    cut = _WARNED + ("Traceback (most recent call last):\n"
                     '  File "/usr/lib/python3.10/site-packages/vllm/_custom_ops.py", line 40, in rms_norm\n'
                     "    torch.ops._C.rms_norm(out, input, weight, epsilon)\n")
    assert reads(cut)[:2] == (True, "dependency_mismatch")
    assert vllm_signature(cut) == "vllm_c_extension_link"


# --- w5310: the engine process's logger.exception record, its traceback cut -------------------------------------


def test_the_engine_records_message_cut_before_its_traceback_is_the_engines_death():
    """The corpus log: "HIP error: invalid argument" and HIP's hints under "ERROR ... engine.py:366]", the log's
    last record."""
    assert reads(read_log("w5310.log"))[:2] == (True, "unknown")


def test_the_same_record_in_another_form():
    """0.8.0's stamp (``[engine.py:448]``), a one-line message."""
    text = ("INFO 03-01 10:00:00 [selector.py:129] Using Flash Attention backend.\n"
            "ERROR 03-01 10:00:05 [engine.py:448] 'NoneType' object has no attribute 'get_num_layers'\n")
    assert reads(text)[:2] == (True, "unknown")


def test_the_record_at_another_line_or_level_or_not_last_is_not_read_so():
    """The same message at WARNING, or under a stamp of another engine.py line, decides nothing; followed by the
    record's whole traceback, the traceback reads it (as before)."""
    warned = "WARNING 11-29 09:36:15 engine.py:366] HIP error: invalid argument\n"
    assert reads(warned)[0] is False
    other = "ERROR 11-29 09:36:15 engine.py:300] HIP error: invalid argument\n"
    assert reads(other)[0] is False
    head = "ERROR 11-29 09:36:15 engine.py:366] "
    whole = (head + "'model.layers.0.mlp.experts.w13_weight'\n"
             + vllm_traceback(("vllm/engine/multiprocessing/engine.py", 357, "run_mp_engine",
                               "engine = MQLLMEngine.from_engine_args(engine_args=engine_args,"),
                              exc=None, head=head))
    assert reads(whole)[:2] == (True, "weights_unreadable")


# --- w5307: V0's engine loop timing out, handed to a request ----------------------------------------------------

_HANDLER = ("\nThe above exception was the direct cause of the following exception:\n\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/site-packages/uvicorn/protocols/http/httptools_impl.py", line 411, in run_asgi\n'
            "    result = await app(  # type: ignore[func-returns-value]\n")


def _loop(*frames, exc):
    out = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out += [f'  File "/usr/lib/python3.10/site-packages/{path}", line {line}, in {func}', f"    {code}"]
    return "\n".join(out + [exc]) + "\n"


def test_the_engine_loops_timeout_in_a_requests_traceback_is_a_hang():
    """The corpus log: generate -> __anext__ -> _raise_exception_on_finish -> run_engine_loop's
    ``await asyncio.wait_for(`` -> asyncio.exceptions.TimeoutError, then the request handler's chained
    traceback (cut)."""
    text = read_log("w5307.log")
    assert reads(text) == (True, "hang", "serving")
    assert vllm_signature(text) == "vllm_engine_loop_timeout"


def test_the_same_timeout_in_another_form():
    """0.5.0's lines (``_log_task_completion`` :42, run_engine_loop :529) and Python 3.11's bare TimeoutError, the
    handler's traceback cut after its first frame."""
    text = _loop(("vllm/engine/async_llm_engine.py", 42, "_log_task_completion", "return_value = task.result()"),
                 ("vllm/engine/async_llm_engine.py", 529, "run_engine_loop",
                  "has_requests_in_progress = await asyncio.wait_for("),
                 ("asyncio/tasks.py", 502, "wait_for", "raise exceptions.TimeoutError() from exc"),
                 exc="TimeoutError") + _HANDLER
    assert reads(text) == (True, "hang", "serving")


def test_a_requests_own_timeout_is_the_requests_error():
    """A TimeoutError of the request handler's own wait (no engine loop frame) stays one request's error."""
    text = _loop(("vllm/entrypoints/openai/serving_chat.py", 300, "create_chat_completion",
                  "return await asyncio.wait_for(generator, timeout)"),
                 ("asyncio/tasks.py", 458, "wait_for", "raise exceptions.TimeoutError() from exc"),
                 exc="asyncio.exceptions.TimeoutError") + _HANDLER
    assert reads(text)[:2] == (False, "request_error")


# --- w5317: cut at torch.cuda.graph's __exit__ --------------------------------------------------------------------

_TAG = "(VllmWorker rank=0 pid=12144) ERROR 04-30 16:21:27 [multiproc_executor.py:380] "
_WITH = ("vllm/compilation/backends.py", 681, "__call__", "with torch.cuda.graph(cudagraph, pool=self.graph_pool):")


def test_a_cut_at_torchs_graph_exit_is_the_capture():
    text = read_log("w5317.log")
    assert reads(text) == (True, "cuda_graph_capture", "graph_capture")
    assert vllm_signature(text) == "vllm_capture_cut"


def test_the_same_cut_at_the_graphs_enter():
    """0.30.0's cuda_graph.py, cut at ``__enter__`` beginning the capture."""
    text = vllm_traceback(("vllm/compilation/cuda_graph.py", 315, "__call__", "with torch.cuda.graph("),
                          ("torch/cuda/graphs.py", 462, "__enter__", "self.cuda_graph.capture_begin("),
                          exc=None, head=_TAG)
    assert reads(text)[:2] == (True, "cuda_graph_capture")


def test_an_oom_at_capture_end_or_another_exit_is_not_the_capture():
    """A whole out-of-memory raised by capture_end is cuda_oom (#18446's form); a cut at another module's
    ``__exit__`` (torch's profiler) is no capture."""
    oom = vllm_traceback(_WITH, ("torch/cuda/graphs.py", 186, "__exit__", "self.cuda_graph.capture_end()"),
                         ("torch/cuda/graphs.py", 84, "capture_end", "super().capture_end()"),
                         exc="RuntimeError: CUDA error: out of memory", head=_TAG)
    assert reads(oom)[1] == "cuda_oom"
    other = vllm_traceback(("vllm/worker/worker.py", 200, "profile", "with torch.profiler.profile():"),
                           ("torch/profiler/profiler.py", 800, "__exit__", "self.stop()"), exc=None, head=_TAG)
    assert reads(other)[1] != "cuda_graph_capture"


test_each_rules_text_is_vllms_own = wheel_text_test([
    ("0.5.0", "vllm/_custom_ops.py", 'logger.warning("Failed to import from vllm._C with %r", e)'),
    ("0.9.2", "vllm/_custom_ops.py", 'logger.warning("Failed to import from vllm._C with %r", e)'),
    ("0.34.0", "vllm/platforms/interface.py", 'logger.warning_once("Failed to import from vllm._C: %s", repr(e))'),
    ("0.4.0.post1", "vllm/engine/async_llm_engine.py", "Background loop has errored already."),
])


@pytest.mark.parametrize(("release", "path", "line", "code"), [
    ("0.5.0", "vllm/_custom_ops.py", 7, "import vllm._C"),
    ("0.5.0", "vllm/_custom_ops.py", 8, "except ImportError as e:"),
    ("0.5.0", "vllm/_custom_ops.py", 11, 'logger.warning("Failed to import from vllm._C with %r", e)'),
    ("0.9.2", "vllm/_custom_ops.py", 20, 'logger.warning("Failed to import from vllm._C with %r", e)'),
    ("0.34.0", "vllm/platforms/interface.py", 382, "Failed to import from vllm._C: %s"),
    ("0.6.4.post1", "vllm/engine/multiprocessing/engine.py", 365, "except BaseException as e:"),
    ("0.6.4.post1", "vllm/engine/multiprocessing/engine.py", 366, "logger.exception(e)"),
    ("0.6.4.post1", "vllm/engine/multiprocessing/engine.py", 368, "raise e"),
    ("0.7.2", "vllm/engine/multiprocessing/engine.py", 389, "logger.exception(e)"),
    ("0.7.3", "vllm/engine/multiprocessing/engine.py", 400, "logger.exception(e)"),
    ("0.8.0", "vllm/engine/multiprocessing/engine.py", 448, "logger.exception(e)"),
    ("0.8.5.post1", "vllm/engine/multiprocessing/engine.py", 448, "logger.exception(e)"),
    ("0.9.2", "vllm/engine/multiprocessing/engine.py", 458, "logger.exception(e)"),
    ("0.10.0", "vllm/engine/multiprocessing/engine.py", 456, "logger.exception(e)"),
    ("0.4.0.post1", "vllm/engine/async_llm_engine.py", 38, "task.result()"),
    ("0.4.0.post1", "vllm/engine/async_llm_engine.py", 44, "error_callback(exception)"),
    ("0.4.0.post1", "vllm/engine/async_llm_engine.py", 480, "has_requests_in_progress = await asyncio.wait_for("),
    ("0.4.0.post1", "vllm/engine/async_llm_engine.py", 485, "self.set_errored(exc)"),
    ("0.4.0.post1", "vllm/engine/async_llm_engine.py", 486, "raise"),
    ("0.5.0", "vllm/engine/async_llm_engine.py", 529, "has_requests_in_progress = await asyncio.wait_for("),
    ("0.8.5.post1", "vllm/compilation/backends.py", 681, "with torch.cuda.graph(cudagraph, pool=self.graph_pool):"),
    ("0.2.7", "vllm/engine/llm_engine.py", 275, 'logger.info(f"# GPU blocks: {num_gpu_blocks}, "'),
    ("0.2.7", "vllm/engine/llm_engine.py", 282, "max_seq_len = self.cache_config.block_size * num_gpu_blocks"),
])
def test_the_cited_lines(release, path, line, code):
    """The lines the rules and the left miss cite."""
    source = VLLM_WHEELS / release / path
    if not source.exists():
        pytest.skip(not_unpacked(source))
    assert code in source.read_text().splitlines()[line - 1]


def test_torchs_graph_context_begins_and_ends_the_capture():
    """torch 2.13.0's torch.cuda.graph (the installed torch, where it is that release)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        pytest.skip("torch is not installed here")
    if not importlib.metadata.version("torch").startswith("2.13.0"):
        pytest.skip("the lines are torch 2.13.0's")
    lines = (Path(spec.origin).parent / "cuda" / "graphs.py").read_text().splitlines()
    assert "def __enter__(self) -> None:" in lines[436]
    assert "self.cuda_graph.capture_begin(" in lines[461]
    assert "def __exit__(self, *args: object) -> None:" in lines[470]
    assert "self.cuda_graph.capture_end()" in lines[476]
