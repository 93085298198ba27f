"""vLLM's engine: the echoes of a death elsewhere (the engine core gone, its output handler
raising it) and the stalls of its processes waiting on each other. The echoes are ``echo``
signatures of kind ``unknown``: they never win over the error they echo, and alone they say
where that error is printed. Part of :mod:`.vllm`'s list, in its order."""

from __future__ import annotations

from ddlab.vllm_crashes import library
from ddlab.crashes.kinds.requests import REQUEST_FRAMES
from ddlab.crashes.signature import Signature

__all__ = ["ECHO_LINES", "SERVING_ECHOES", "ENGINE_DEAD", "ENGINE_PROCESS_RAISED", "OUTPUT_HANDLER_FAILED",
           "V0_LOOP_RAISED", "SHM_STALL", "RPC_TIMEOUT",
           "QUEUE_TIMEOUT", "CGRAPH_TIMEOUT", "ITERATION_TIMEOUT", "LOOP_TIMEOUT",
           "LOOP_WAIT_CANCELLED", "LOOP_TIMEOUT_RAISED", "KV_SEND_REQUEST_GONE"]

_V0 = library.V0

# --- the engine: echoes of a death elsewhere, and a stall ----------------------------

# (round 13) V0's API server answering a request on a dead engine with a 500 and exiting
_V0_DEAD_ON_REQUEST = r"(?:AsyncLLMEngine|MQLLMEngine) is already dead, terminating server process"
# (round 60) V0's /health answered 500: its handler only awaits the engine's check_health and raises what that
# raises (uvicorn then answers 500, "Exception in ASGI application"), and that raises only for a dead engine: the
# background loop stopped or errored (engine/async_llm_engine.py:838-839, is_stopped :415-418 (0.5.0)), a worker
# the executor found dead (:847, executor/multiproc_gpu_executor.py:125 (0.5.0)), the multiprocessing client's
# recorded death (engine/multiprocessing/client.py:398-399 (0.6.4.post1)); api_server.py:84 (0.5.0), :293
# (0.6.4.post1). A V1 server answers a dead engine's /health with 503 (not read here)
_V0_HEALTH_500 = r'"GET /health HTTP/[\d.]+" 500\b'
# (round 19) "MQEngineDeadError: Engine loop is not running. Inspect the stacktrace to find the original error"
_V0_MQ_DEAD = r"\bMQEngineDeadError: Engine loop is not running\b"
# (round 20) the engine core's dump of the step it failed on: only its log_error_detail writes it, around
# the busy loop's execute_model, and re-raises (v1/engine/core.py:509-512 (0.30.0), :628 (0.34.0), :312
# (0.11.1)): the engine core dies of a serving step
_DUMP_REST = r"Dumping scheduler (?:output for model execution|stats): \w+\("
ECHO_LINES = (
    # a worker process gone (v1/executor/multiproc_executor.py:405 (0.34.0), :315 (0.30.0);
    # older: "Worker proc X died unexpectedly, shutting down executor"; ray_executor_v2.py:523),
    # the engine dumping the batch it failed on (logging_utils/dump_input.py:73 (0.34.0))
    r"Worker proc \S+ died unexpectedly", r"RayWorkerProc rank=\d+ died unexpectedly",
    r"Dumping input data for V1 LLM engine",
    # (round 20) the same dump's next records, what a paste cut above the first keeps
    # (logging_utils/dump_input.py:79, :81 (0.11.1, 0.30.0, 0.33.0, 0.34.0))
    _DUMP_REST,
    r"Engine core initialization failed\. See root cause above", r"EngineCore failed to start\.",
    r"EngineCore encountered a fatal error\.", r"EngineCore encountered an issue\. See stack trace",
    r"AsyncLLM output_handler failed\.", r"\bEngineDeadError\b", r"Engine process failed to start",
    r"Engine background task failed", r"AsyncEngineDeadError", r"MQLLMEngineDeadError",
    r"Frontend process failed during engine core initialization",
    # (round 4) the client's and the launcher's report of the engine core process gone
    # (v1/utils.py:593 (0.34.0) "Engine core process X died unexpectedly."; older releases'
    # core_client: "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."),
    # a worker's failed start, logged above its traceback (v1/executor/multiproc_executor.py:1091
    # (0.34.0), :944 (0.30.0))
    r"Engine core proc(?:ess)? \S+ died unexpectedly", r"WorkerProc failed to start\.",
    # (round 76) 0.8's multiproc executor: a worker meeting an unrecoverable error signals its parent (SIGUSR1), whose
    # handler logs this at CRITICAL and shuts the executor down, the engine core client the same on its own signal
    # (v1/executor/multiproc_executor.py:48-53, v1/engine/core_client.py:269 (0.8.0); "Mulitproc" as vLLM spells it)
    r"\b(?:Mul\w*procExecutor )?[Gg]ot fatal signal from worker processes, shutting down\b",
    # (round 61) vllm-omni's stages run vLLM's engine core in a process of their own and report its end as
    # vLLM's does: "StageEngineCoreProc failed to start." before the engine core is built, "... encountered a
    # fatal error." after (vllm_omni/engine/stage_engine_core_proc.py:258, :260 (vllm-omni 0.30.0), then
    # _send_engine_dead and raise); a diffusion stage's process, "StageDiffusionProc encountered a fatal
    # error." (diffusion/stage_diffusion_proc.py:708), for whatever ended it, start-up included
    r"\bStage(?:EngineCore|Diffusion)Proc (?:failed to start|encountered a fatal error)\.",
    # (round 13) V0's API server answering a request on a dead engine with a 500 and exiting
    # (entrypoints/launcher.py:88, :99 (0.6.4.post1); :93, :104 (0.7.3))
    _V0_DEAD_ON_REQUEST,
    # (round 19) V0's multiprocessing client raising the engine's death into every request, its original
    # error in the message (engine/multiprocessing/__init__.py:21 MQEngineDeadError, :129-135
    # ENGINE_DEAD_ERROR (0.6.4.post1); :26, :161-169 (0.7.3))
    _V0_MQ_DEAD,
    _V0_HEALTH_500,
)
# fatal: a dead engine is never carried past. A streamed request's "200 OK" access line is
# written when its headers go out (uvicorn), before the engine's death reaches the stream, and
# after EngineDeadError every request fails (v1/engine/exceptions.py:13 (0.34.0): "Raised when
# the EngineCore dies. Unrecoverable.")
ENGINE_DEAD = Signature(
    "vllm_engine_dead", "unknown", "the engine core process died",
    ("The API server only echoes the engine core's death: the engine core's own traceback (the "
     "lines tagged `(EngineCore_DP0 pid=N)`, or the worker's) is printed above this and names the "
     "cause; get the whole log from the start.",),
    patterns=ECHO_LINES, lines=ECHO_LINES, priority=5, echo=True, fatal=True,
    sources=(("0.30.0", "vllm/v1/engine/utils.py:1321"), ("0.33.0", "vllm/v1/engine/utils.py:1474"),
             ("0.34.0", "vllm/v1/engine/utils.py:1478"), ("0.34.0", "vllm/v1/engine/core.py:1757"),
             ("0.34.0", "vllm/v1/engine/core.py:1759"), ("0.34.0", "vllm/v1/engine/exceptions.py:20"),
             ("0.34.0", "vllm/v1/engine/async_llm.py:957"),
             (_V0, "vllm/entrypoints/openai/api_server.py:211"),
             (_V0, "vllm/engine/async_llm_engine.py:65"), (_V0, "vllm/entrypoints/launcher.py:88"),
             (_V0, "vllm/entrypoints/launcher.py:99"), ("0.7.3", "vllm/entrypoints/launcher.py:104"),
             ("0.30.0", "vllm/v1/executor/multiproc_executor.py:315"),
             ("0.34.0", "vllm/v1/executor/multiproc_executor.py:405"),
             ("vllm 0.8.0", "vllm/v1/executor/multiproc_executor.py:49"),
             ("vllm 0.8.0", "vllm/v1/engine/core_client.py:269"),
             ("0.34.0", "vllm/v1/executor/ray_executor_v2.py:523"),
             ("0.34.0", "vllm/logging_utils/dump_input.py:73"),
             ("0.30.0", "vllm/logging_utils/dump_input.py:79"), ("0.34.0", "vllm/logging_utils/dump_input.py:79"),
             ("0.34.0", "vllm/logging_utils/dump_input.py:81"), ("0.30.0", "vllm/v1/engine/core.py:509"),
             ("0.34.0", "vllm/v1/utils.py:593"),
             ("0.34.0", "vllm/v1/executor/multiproc_executor.py:1091"),
             ("0.30.0", "vllm/v1/executor/multiproc_executor.py:944"),
             (_V0, "vllm/engine/multiprocessing/__init__.py:21"),
             (_V0, "vllm/engine/multiprocessing/__init__.py:129"),
             ("0.7.3", "vllm/engine/multiprocessing/__init__.py:161"),
             (_V0, "vllm/entrypoints/openai/api_server.py:293"),
             (_V0, "vllm/engine/multiprocessing/client.py:398")))

# (round 60) CPython's report of a process whose run() raised: "Process <name>:" then the traceback
# (multiprocessing/process.py:329 (CPython 3.11.7), in _bootstrap's bare except, exitcode 1; SystemExit is
# caught above it and prints none). The engine core's run_engine_core logs and re-raises whatever ended it
# (v1/engine/core.py:706-712 (0.11.0)), under its process name: "EngineCore_0" (v1/engine/utils.py:119
# (0.10.1.1)), "EngineCore_DP0" (:119 (0.11.0)), "EngineCore" (:289 (0.34.0)). Ranked below the echoes above,
# whose lines say more where a log has both
ENGINE_PROCESS_RAISED = Signature(
    "vllm_engine_process_raised", "unknown", "the engine core process died of an exception",
    ENGINE_DEAD.advice,
    lines=(r"^Process EngineCore(?:_(?:DP)?\d+)?:\s*$",), priority=4, echo=True, fatal=True,
    sources=(("CPython 3.11.7", "Lib/multiprocessing/process.py:329 (BaseProcess._bootstrap: Process %s:)"),
             ("0.34.0", "vllm/v1/engine/utils.py:289"), ("0.34.0", "vllm/v1/engine/core.py:1757")))

# the engine's busy loop was running when it died (v1/engine/core.py:1759, EngineDeadError only
# after construction, :1760 _send_engine_dead), or it dumped the batch it failed on: serving
SERVING_ECHOES = (r"\bEngineDeadError\b", r"EngineCore encountered (?:a fatal error|an issue)",
                  # (round 61) vllm-omni's stage engine core, past its construction (above)
                  r"\bStageEngineCoreProc encountered a fatal error\.",
                  # (round 63) the orchestrator's loop polling a stage's outputs, which runs only once every
                  # stage has started (vllm-omni 0.30.0 omni_engine_base.py:445 _initialize_stages, then :469
                  # orchestrator.run(); the poll's error, stage_pool.py:1228, from orchestrator.py:906)
                  r"\[(?:StagePool|Orchestrator)\] _poll_stage_raw failed for stage-\d+",
                  r"Dumping input data for V1 LLM engine", _DUMP_REST, r"AsyncLLM output_handler failed",
                  # (round 13) V0: a request met the dead engine; the engine loop, started by the first
                  # request (add_request -> start_background_loop), ended (engine/async_llm_engine.py:68
                  # (0.6.4.post1), :71 (0.7.3), _log_task_completion)
                  _V0_DEAD_ON_REQUEST, r"AsyncEngineDeadError: Task finished unexpectedly\.",
                  # (round 67) asyncio's report of that done-callback raising (its "Exception in callback
                  # <handle>"): the loop's task failed, _log_task_completion logged it and raised
                  # AsyncEngineDeadError (engine/async_llm_engine.py:68-73 (0.8.0)); the loop runs only once a
                  # request started it (:932-934 (0.8.0), add_request -> start_background_loop)
                  r"^Exception in callback _log_task_completion\(",
                  # (round 19) V0's multiprocessing client hands the engine's death to the requests in
                  # flight (engine/multiprocessing/client.py:229-242, queue.put_nowait(self.dead_error)),
                  # each raised in its handler (client.py:633 (0.6.4.post1), raise request_output)
                  _V0_MQ_DEAD,
                  # (round 60) the API server's /health asked the engine it serves with (above)
                  _V0_HEALTH_500)

# (round 12) the API server's output handler's own frame in a traceback: what the engine core client
# forwarded through its outputs queue (the engine's death, its socket's failure) is raised there "to
# shut down the server" (v1/engine/core_client.py:1304-1310 (0.34.0), :1168-1171 (0.30.0)), then handed
# to every request's queue (v1/engine/output_processor.py:596-600 (0.34.0), propagate_error), so a
# streamed request's traceback shows that frame too: the engine's failure, not the request's. The
# code line is the frame's (async_llm.py:894 (0.34.0), :880 (0.33.0), :789 (0.30.0)); an echo like the
# engine's death, ranked just above the stream handler's request error, so the cause it forwards wins.
# (round 58) Or the frame line itself, where a paste cut below it: whatever output_handler raised ends it
# (its ``try`` holds the whole ``while True`` loop; the ``except`` logs, propagate_error hands the exception to
# every request's queue, RequestOutputCollector.get raises it in each, and the task returns: 0.11.0
# v1/engine/async_llm.py:435-437, :479-481, output_processor.py:318-323, :57-59; 0.34.0 async_llm.py:950-958)
_OUTPUT_HANDLER = (r"^\s*outputs = await engine_core\.get_output_async\(\)\s*$"
                   r'|v1[/\\]engine[/\\]async_llm\.py", line \d+, in output_handler\s*$')
OUTPUT_HANDLER_FAILED = Signature(
    "vllm_output_handler_failed", "unknown", "the API server's output handler raised the engine's failure",
    ENGINE_DEAD.advice,
    patterns=(r".",), context=(_OUTPUT_HANDLER,), cut_ok=True, priority=5, echo=True, fatal=True,
    phase="serving",
    sources=(("0.30.0", "vllm/v1/engine/async_llm.py:789"), ("0.33.0", "vllm/v1/engine/async_llm.py:880"),
             ("0.34.0", "vllm/v1/engine/async_llm.py:894"), ("0.34.0", "vllm/v1/engine/core_client.py:1310"),
             ("0.30.0", "vllm/v1/engine/core_client.py:1171"),
             ("0.34.0", "vllm/v1/engine/output_processor.py:596"), ("vllm 0.11.0", "vllm/v1/engine/async_llm.py:481"),
             ("vllm 0.11.0", "vllm/v1/engine/output_processor.py:59"), ("0.34.0", "vllm/v1/engine/async_llm.py:958")))

# (round 94) V0's analogue, where a request's traceback shows it: the background loop's task ended with an error,
# and its done-callback's ``task.result()`` re-raises it (_raise_exception_on_finish, engine/async_llm_engine.py:38
# (0.4.1); _log_task_completion, :55 (0.6.4.post1)), hands it to every request's stream (error_callback ->
# propagate_exception, :393-395 (0.4.1)) and refuses each later request, "Background loop has errored already"
# (:405-407): the engine's death, whatever the loop raised, not the one request's (under its ASGI 500). Read only in
# a request's traceback (the HTTP server's frames): the callback's own record of it ("Engine background task
# failed", :43, logger.error with exc_info) is ENGINE_DEAD's, its chain the cause as before
_V0_LOOP_RESULT = (r", in (?:_raise_exception_on_finish|_log_task_completion)\s*\n"
                   r"\s*(?:return_value = )?task\.result\(\)\s*$")
V0_LOOP_RAISED = Signature(
    "vllm_v0_loop_raised", "unknown", "V0's engine loop died, its error handed to a request",
    ENGINE_DEAD.advice,
    patterns=(r".",), context=(_V0_LOOP_RESULT, REQUEST_FRAMES), cut_ok=True, priority=5, echo=True, fatal=True,
    phase="serving",
    sources=(("vllm 0.4.1", "vllm/engine/async_llm_engine.py:38"),
             ("vllm 0.4.1", "vllm/engine/async_llm_engine.py:395"),
             ("vllm 0.4.1", "vllm/engine/async_llm_engine.py:407"),
             ("vllm 0.4.1", "vllm/engine/async_llm_engine.py:43"),
             ("vllm 0.6.4.post1", "vllm/engine/async_llm_engine.py:55")))

# every process waits on the shared-memory message queue; a rank that stops answering leaves
# the others printing this once a minute (shm_broadcast.py:115 (0.34.0))
SHM_STALL = Signature(
    "vllm_shm_stall", "hang", "the engine's processes stopped answering each other",
    ("A process of the engine stopped (a rank stuck in a collective, a hung kernel) and the others "
     "wait for it on the shared-memory queue. `py-spy dump --pid PID` on each EngineCore / worker "
     "process shows where it waits; retry with `--enforce-eager` to rule out a graph hang, and "
     "with NCCL_DEBUG=INFO when tensor or data parallel ranks are involved.",),
    lines=(r"No available shared memory broadcast block found in \d+ seconds?",),
    priority=22, running=True,
    cleared_by=(r"Avg prompt throughput: [\d.]*[1-9][\d.]* tokens/s", r"Graph capturing finished",
                r"Application startup complete", r"init engine \(profile, create kv cache",
                # the notice names the slow work it may be (compilation, weight / KV cache work):
                # a later line that ends such a step, in any process, shows the wait was that work
                # (round 10: backends.py:422, monitor.py:20, gpu_worker.py:796, default_loader.py:544,
                # gpu/model_runner.py:442 (0.34.0); backends.py:394, gpu_worker.py:641 (0.30.0))
                r"Compiling a graph for compile range .* takes [\d.]+ s",
                r"torch\.compile (?:takes|took) [\d.]+ s in total", r"Available KV cache memory: [\d.]+ GiB",
                r"Loading weights took [\d.]+ seconds", r"Model loading took \S+ GiB memory",
                # (round 77) the start-up's profiling run ending (monitor_profiling_run, monitor.py:81-84 (0.30.0),
                # :77 (0.18.0)): the wait was that run
                r"Initial profiling/warmup run took [\d.]+ s"),
    # (round 63) the notice is an INFO (acquire_read: logger.info(long_wait_time_msg(...)), shm_broadcast.py:542,
    # the text :81-88 (0.15.1)) that names compilation; right after Dynamo's bytecode transform (backends.py:873
    # (0.15.1), :1049 (0.18.0)) or the compile cache's line (:813 (0.15.1)), Inductor's compile is under way
    # and the first notice is that wait (a second notice after it still reads as a stall)
    busy_before=(r"Dynamo bytecode transform time: [\d.]+ s",
                 r"Using cache directory: .* for vLLM's torch\.compile"),
    sources=(("0.30.0", "vllm/distributed/device_communicators/shm_broadcast.py:104"),
             ("vllm 0.15.1", "vllm/distributed/device_communicators/shm_broadcast.py:542"),
             ("vllm 0.15.1", "vllm/compilation/backends.py:873"),
             ("0.33.0", "vllm/distributed/device_communicators/shm_broadcast.py:112"),
             ("0.30.0", "vllm/compilation/monitor.py:82"), ("vllm 0.18.0", "vllm/compilation/monitor.py:77"),
             ("0.34.0", "vllm/distributed/device_communicators/shm_broadcast.py:115")))


# (round 22) V0's async engine loop waits for each step with a timeout (VLLM_ENGINE_ITERATION_TIMEOUT_S, 60 s
# by default, envs.py:242 (0.6.4.post1)) "due to unrecoverable errors (eg. NCCL timeouts)" (the wait,
# engine/async_llm_engine.py:865), logs "Engine iteration timed out. This should never happen!" on
# asyncio.TimeoutError, marks the engine errored and re-raises (:885-889 (0.6.4.post1), :838-842 (0.7.3));
# the loop then ends with "Engine background task failed" (:65). The loop runs only while requests are in
# flight (started by the first add_request): a step that never finished while serving
_ITERATION_TIMEOUT = r"Engine iteration timed out\. This should never happen!"
ITERATION_TIMEOUT = Signature(
    "vllm_iteration_timeout", "hang", "a V0 engine step did not finish within the iteration timeout",
    ("One step of the engine (a forward over the batch) did not return within VLLM_ENGINE_ITERATION_TIMEOUT_S "
     "(60 s by default), so the engine gave up: a rank stuck in a collective (tensor parallel: NCCL or "
     "the custom all-reduce) or a hung kernel. Retry with `--disable-custom-all-reduce`, with "
     "`--enforce-eager` (no CUDA graphs), and with NCCL_DEBUG=INFO; `py-spy dump --pid PID` on each "
     "worker shows where it waits. Raise the timeout only for a step known to be slow.",),
    patterns=(_ITERATION_TIMEOUT,), lines=(_ITERATION_TIMEOUT,), priority=24, phase="serving", running=True,
    fatal=True,
    sources=((_V0, "vllm/engine/async_llm_engine.py:887"), ("0.7.3", "vllm/engine/async_llm_engine.py:840"),
             (_V0, "vllm/engine/async_llm_engine.py:865"), (_V0, "vllm/envs.py:242")))

# (round 53) the same timeout where a request's traceback shows it: V0's loop awaits each step with
# asyncio.wait_for and on its TimeoutError marks the engine errored and re-raises (0.4.0.post1
# engine/async_llm_engine.py:478-486, 0.5.0 :529); the loop task ends with it, _raise_exception_on_finish hands
# it to every request's stream (:30-46, error_callback -> propagate_exception) and a later request meets
# "Background loop has errored already" (:389-392): raised at that wait, an echo of the engine's stall (fatal)
_LOOP_WAIT = r", in run_engine_loop\s*\n\s*has_requests_in_progress = await asyncio\.wait_for\("
LOOP_TIMEOUT = Signature(
    "vllm_engine_loop_timeout", "hang", "V0's engine loop timed out waiting for a step",
    ITERATION_TIMEOUT.advice,
    types=r"(?:asyncio\.(?:exceptions\.)?)?TimeoutError", patterns=(r".",), context=(_LOOP_WAIT,), priority=24,
    phase="serving", running=True, echo=True, fatal=True,
    sources=(("vllm 0.4.0.post1", "vllm/engine/async_llm_engine.py:480"),
             ("vllm 0.4.0.post1", "vllm/engine/async_llm_engine.py:485"),
             ("vllm 0.4.0.post1", "vllm/engine/async_llm_engine.py:44"),
             ("vllm 0.4.0.post1", "vllm/engine/async_llm_engine.py:392"),
             ("vllm 0.5.0", "vllm/engine/async_llm_engine.py:529")))


# (round 56) the same timeout from 0.5.1 on: the loop awaits its steps with asyncio.wait inside
# ``async with asyncio_timeout(ENGINE_ITERATION_TIMEOUT_S)`` (0.5.1 engine/async_llm_engine.py:588-589; 0.6.4.post1
# :865-866; 0.8.0 :850-851). The timeout fires by cancelling the task at that wait, and the CancelledError is
# turned into the TimeoutError the loop re-raises (engine/async_timeout.py:175-178 (0.6.4.post1), the backport
# used before Python 3.11): a traceback whose CancelledError was raised at the loop's wait is the first of that
# chain, above "During handling ..." and the TimeoutError. A cancel from outside (shutdown) ends the loop quietly:
# _log_task_completion logs "Engine is gracefully shutting down." with no traceback (:59-62 (0.6.4.post1))
_LOOP_WAIT_CANCELLED = r", in run_engine_loop\s*\n\s*done, _ = await asyncio\.wait\("
LOOP_WAIT_CANCELLED = Signature(
    "vllm_engine_loop_cancelled", "hang", "V0's engine loop timed out waiting for a step",
    ITERATION_TIMEOUT.advice,
    types=r"(?:asyncio\.(?:exceptions\.)?)?CancelledError", patterns=(r".",), context=(_LOOP_WAIT_CANCELLED,),
    priority=24, phase="serving", running=True, echo=True, fatal=True,
    sources=(("vllm 0.5.1", "vllm/engine/async_llm_engine.py:589"),
             ("vllm 0.6.4.post1", "vllm/engine/async_llm_engine.py:866"),
             ("vllm 0.6.4.post1", "vllm/engine/async_timeout.py:178"),
             ("vllm 0.6.4.post1", "vllm/engine/async_llm_engine.py:62"),
             ("vllm 0.8.0", "vllm/engine/async_llm_engine.py:851")))

# (round 88) the same timeout's TimeoutError where a request shows it: the backport raises it at
# ``async with asyncio_timeout(ENGINE_ITERATION_TIMEOUT_S)`` (0.5.1 engine/async_llm_engine.py:588,
# engine/async_timeout.py:178; 0.6.4.post1 :865), the loop task ends with it and _log_task_completion (:43 (0.5.1))
# hands it to each request's stream: raised at the loop's timed block, an echo of the engine's stall (fatal)
_LOOP_TIMED_BLOCK = r", in run_engine_loop\s*\n\s*async with asyncio_timeout\(ENGINE_ITERATION_TIMEOUT_S\):"
LOOP_TIMEOUT_RAISED = Signature(
    "vllm_engine_loop_timeout_raised", "hang", "V0's engine loop timed out waiting for a step",
    ITERATION_TIMEOUT.advice,
    types=r"(?:asyncio\.(?:exceptions\.)?)?TimeoutError", patterns=(r".",), context=(_LOOP_TIMED_BLOCK,),
    priority=24, phase="serving", running=True, echo=True, fatal=True,
    sources=(("vllm 0.5.1", "vllm/engine/async_llm_engine.py:588"),
             ("vllm 0.5.1", "vllm/engine/async_timeout.py:178"),
             ("vllm 0.5.1", "vllm/engine/async_llm_engine.py:43"),
             ("vllm 0.6.4.post1", "vllm/engine/async_llm_engine.py:865")))

# the executor waits for its workers' answer to a collective RPC with a timeout (V1's
# multiproc executor): the workers stopped answering a model step, the engine gives up
RPC_TIMEOUT = Signature(
    "vllm_rpc_timeout", "hang", "the engine's workers stopped answering",
    SHM_STALL.advice,
    patterns=(r"RPC call to \w+ timed out\.",), types=r"(?:\w+\.)*TimeoutError",
    priority=24,
    sources=(("0.30.0", "vllm/v1/executor/multiproc_executor.py:435"),
             ("0.34.0", "vllm/v1/executor/multiproc_executor.py:533")))


# (round 19) the same wait seen from below: the shared-memory message queue gives up on a peer with a bare
# TimeoutError, raised in its own frame (shm_broadcast.py:366, :424 (0.7.3), acquire_write / acquire_read;
# :495 (0.11.1), acquire_read; :747 (0.30.0), :831 (0.34.0), ReadTimeoutWithWarnings.timeout_ms; :1055
# (0.34.0), recv of a remote reader's socket), and the executor turns it into RPC_TIMEOUT's "RPC call to X
# timed out." (multiproc_executor.py:433-435 (0.30.0), :507-509 (0.33.0), :531-533 (0.34.0)): a paste cut
# before that outer line still shows the wait. Or a traceback opening in the executor's get_response at
# that dequeue, cut before its exception: its first frame is get_response, so get_response caught it, and
# the only exception it catches there is the TimeoutError (the lines just cited). (round 76) Or the queue's bare
# raise with its frame line cut, chained under the engine core's step: vLLM raises a bare TimeoutError nowhere
# else (shm_broadcast.py:463, :536, :640 (0.15.1) the only ``raise TimeoutError`` statements of its package;
# :760, :831, :1055 (0.34.0)), and the executor raises its own "from e" (multiproc_executor.py:355 (0.15.1))
_QUEUE_RAISED = r'shm_broadcast\.py", line \d+, in \w+\s*\n\s*raise TimeoutError\s*$'
_QUEUE_RAISED_CUT = (r'\A\s*raise TimeoutError\s*\n(?:\w+\.)*TimeoutError\s*\n(?:.*\n)*?'
                     r'\s*File "[^"]*[/\\]v1[/\\]engine[/\\]core\.py", line \d+')
_DEQUEUE_CAUGHT = (r'^Traceback \(most recent call last\):\s*\n\s*File "[^"]*multiproc_executor\.py", line \d+, '
                   r'in get_response\s*\n\s*status, result = mq\.dequeue\(timeout=dequeue_timeout\)\s*$')
QUEUE_TIMEOUT = Signature(
    "vllm_queue_timeout", "hang", "the engine's message queue timed out waiting for its workers",
    SHM_STALL.advice,
    patterns=(r".",), types=r"TimeoutError", context=(rf"{_QUEUE_RAISED}|{_QUEUE_RAISED_CUT}|{_DEQUEUE_CAUGHT}",),
    cut_ok=True, priority=24,
    sources=(("0.7.3", "vllm/distributed/device_communicators/shm_broadcast.py:366"),
             ("0.7.3", "vllm/distributed/device_communicators/shm_broadcast.py:424"),
             ("vllm 0.11.1", "vllm/distributed/device_communicators/shm_broadcast.py:495"),
             ("0.30.0", "vllm/distributed/device_communicators/shm_broadcast.py:747"),
             ("0.34.0", "vllm/distributed/device_communicators/shm_broadcast.py:831"),
             ("0.34.0", "vllm/distributed/device_communicators/shm_broadcast.py:1055"),
             ("0.30.0", "vllm/v1/executor/multiproc_executor.py:433"),
             ("vllm 0.15.1", "vllm/distributed/device_communicators/shm_broadcast.py:463"),
             ("vllm 0.15.1", "vllm/v1/executor/multiproc_executor.py:355"),
             ("0.33.0", "vllm/v1/executor/multiproc_executor.py:507"),
             ("0.34.0", "vllm/v1/executor/multiproc_executor.py:531")))

# (round 88) Ray's compiled graph: the V1 engine core's step waits on the workers' output through the executor's
# FutureWrapper (0.9.2 v1/executor/ray_distributed_executor.py:25 ``return self.ref.get()``), CompiledDAGRef.get
# -> CompiledDAG._execute_until, which reads the output channel with RAY_CGRAPH_get_timeout and re-raises its
# RayChannelTimeoutError as "If the execution is expected to take a long time, increase RAY_CGRAPH_get_timeout
# which is currently N seconds. Otherwise, this may indicate that the execution is hanging." (ray 2.43.0
# dag/compiled_dag_node.py:2350-2355; a stale ref's buffers, :2281-2286): no worker answered the step in time,
# the workers' step stalled (QUEUE_TIMEOUT's reading of the shm queue); vLLM raises the timeout to 300 s for it
# (executor/ray_distributed_executor.py:567)
_CGRAPH_TIMEOUT = r"\bincrease RAY_CGRAPH_get_timeout which is currently \d+ seconds\b"
CGRAPH_TIMEOUT = Signature(
    "vllm_ray_cgraph_timeout", "hang", "Ray's compiled graph timed out waiting for the workers' step",
    ("The engine waited longer than RAY_CGRAPH_get_timeout for its Ray workers' output: a worker's step stalled "
     "(a collective waiting on another rank, a GPU hang) or died without a word. Dump the workers' stacks "
     "(`py-spy dump --pid PID`, or `ray stack`) and read their logs; if the step is only slow, raise "
     "RAY_CGRAPH_get_timeout where Ray reads it (set it before Ray starts: the number in the error is the one "
     "Ray uses), or serve without Ray (`--distributed-executor-backend mp`).",),
    patterns=(_CGRAPH_TIMEOUT,), lines=(_CGRAPH_TIMEOUT,), priority=24, running=True,
    sources=(("ray 2.43.0", "ray/dag/compiled_dag_node.py:2350 (_execute_until: raise RayChannelTimeoutError("
                            "\"... increase RAY_CGRAPH_get_timeout which is currently {timeout} seconds ...\"))"),
             ("ray 2.43.0", "ray/dag/compiled_dag_node.py:2281"),
             ("vllm 0.9.2", "vllm/v1/executor/ray_distributed_executor.py:25"),
             ("vllm 0.9.2", "vllm/executor/ray_distributed_executor.py:567")))


# (round 64) the scheduler frees a request's blocks when its KV connector reports the request's KV sent (PD's
# prefill side: v1/core/sched/scheduler.py:2737-2741 in _update_from_kv_xfer_finished, from update_from_output
# :1670 (0.27.1)), looking the request up by id: a KeyError there is a finished send reported for a request the
# scheduler no longer holds (freed by an abort), the transfer's bookkeeping lost; the engine core's step dies of it
KV_SEND_REQUEST_GONE = Signature(
    "vllm_kv_send_request_gone", "pd_transfer", "a KV transfer reported finished for a request the scheduler had freed",
    ("The KV connector (NIXL in PD disaggregation) reported a request's KV transfer finished after the scheduler "
     "had already dropped the request (an abort or a timeout while its KV was being sent), and the engine died "
     "on the lookup. This is vLLM's bookkeeping, not your configuration: look for client aborts or KV transfer "
     "timeouts just before it, and try a newer vLLM release (report it with the connector's log if it stays).",),
    patterns=(r".",), types=r"KeyError", context=(r", in _update_from_kv_xfer_finish\w*>?[ \t]*$",),
    priority=60, phase="serving",
    sources=(("vllm 0.27.1", "vllm/v1/core/sched/scheduler.py:2714"), ("vllm 0.27.1", "vllm/v1/core/sched/scheduler.py:2741")))
