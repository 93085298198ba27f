"""SGLang Diffusion (``sglang/multimodal_gen``): a request its worker failed, the server serving on.

SGLang Diffusion runs each request's pipeline (its stages: the text encoder, the denoiser, the VAE)
inside a handler that catches whatever the pipeline raises, logs it with its traceback and answers the
request with the error: the scheduler's event loop around ``execute_forward`` in 0.5.5
(``multimodal_gen/runtime/managers/scheduler.py:133-140``, "Error executing forward in scheduler event
loop: ..."), the worker's ``execute_forward`` itself from 0.5.7 on (``managers/gpu_worker.py:133-143``,
"Error executing request ID: ..."; 0.5.13 ``:414``, 0.5.23 ``:860`` "Error executing [grouped] request
ID: ...") with the event loop's own catch around it ("Error executing request in scheduler event loop:
...", 0.5.7 ``scheduler.py:214-215``, 0.5.13 ``:1153``, 0.5.23 ``:1584``). The HTTP endpoint then logs
the failed generation and answers the client (0.5.7 ``runtime/entrypoints/openai/utils.py:178-184``).
So a logged line of those, or a traceback through ``execute_forward`` or a model's or a pipeline stage's
``forward`` in ``multimodal_gen``, is one request's error: ``request_error`` at serving, no crash.
The offline generator (``DiffGenerator.generate``) raises such an answer again for its prompt and its own
loop catches it and goes on to the next prompt: the same, one prompt's error.

Not these: the scheduler's loop ending on repeated receive errors ("Scheduler terminated after 3
consecutive errors", 0.5.8 ``scheduler.py:316-319``: a traceback from ``run_scheduler_process`` through
``event_loop`` with no forward below), a model's constructor at load (``__init__`` frames), the launcher.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "DIFFUSION_FORWARD_FRAMES"]

# the frames only a request's forward passes through, each under the handler that catches it
DIFFUSION_FORWARD_FRAMES = (
    r"multimodal_gen[/\\]runtime[/\\](?:managers[/\\]gpu_worker\.py\", line \d+, in execute_forward"
    r"|(?:models|pipelines(?:_core)?)[/\\]\S+\.py\", line \d+, in forward)\s*$")
# what the handlers log (with the traceback under it): the 0.5.5 event loop's, then 0.5.7's on
_LOGGED = (r"Error executing (?:forward|request) in scheduler event loop: ",
           r"Error executing (?:grouped )?request \S+: ",
           # (round 65) a pipeline stage's profiler logging the stage's exception before it propagates up to
           # those handlers (0.5.6.post2 utils/perf_logger.py:161-168, StageProfiler.__exit__, entered only
           # around a stage's forward: pipelines_core/stages/base.py:191 and the denoising steps; 0.5.5
           # pipelines/stages/base.py:204; 0.5.23 perf_logger.py:349): the request's, not the server's
           r"\[\w+\] Error during execution after [\d.]+ ms: ")

DIFFUSION_REQUEST_FAILED = Signature(
    "diffusion_request_failed", "request_error", "SGLang Diffusion's worker failed one request",
    ("SGLang Diffusion's worker failed one request in its pipeline, logged the error and answered the "
     "request with it; the server kept serving. An attribute or a shape the pipeline's model code does "
     "not find (a config field, a VAE attribute) means the checkpoint is not one the installed release's "
     "pipeline supports: check the model against SGLang Diffusion's supported models, or upgrade SGLang; "
     "otherwise the request's own inputs (its size, number of frames, input image) are the suspects.",),
    patterns=(r".",), context=(DIFFUSION_FORWARD_FRAMES,), lines=_LOGGED,
    priority=11, phase="serving", request=True, cut_ok=True,
    sources=(("sglang 0.5.5", "sglang/multimodal_gen/runtime/managers/scheduler.py:137"),
             ("sglang 0.5.7", "sglang/multimodal_gen/runtime/managers/gpu_worker.py:135"),
             ("0.5.13", "sglang/multimodal_gen/runtime/managers/scheduler.py:1153"),
             ("0.5.13", "sglang/multimodal_gen/runtime/managers/gpu_worker.py:414"),
             ("0.5.23", "sglang/multimodal_gen/runtime/managers/scheduler.py:1584"),
             ("0.5.23", "sglang/multimodal_gen/runtime/managers/gpu_worker.py:860")))

# (round 54) the offline generator (DiffGenerator.generate) raises the error the scheduler answered a
# request with (0.5.7 entrypoints/diffusion_generator.py:221) inside log_generation_timer, which logs
# "Failed to generate output for prompt N: ..." with the traceback and re-raises (0.5.7
# utils/logging_utils.py:473); generate's loop over the requests catches it and goes on to the next
# (:260-261 ``except Exception: continue``), then logs "Completed batch processing"; from 0.5.13 the loop
# logs "Generation failed: ..." and goes on (0.5.13 :352-353, 0.5.23 :453-454): one request failed, the
# run did not
_GENERATOR_RERAISE = (r'diffusion_generator\.py", line \d+, in generate\n\s*'
                      r'raise Exception\(f"\{output_batch\.error\}"\)')
DIFFUSION_GENERATOR_REQUEST_FAILED = Signature(
    "diffusion_generator_request_failed", "request_error",
    "SGLang Diffusion's offline generator failed one prompt and went on",
    DIFFUSION_REQUEST_FAILED.advice,
    types=r"Exception", patterns=(r".",), context=(_GENERATOR_RERAISE,),
    lines=(r"Failed to generate output for prompt(?: \d+)?: ",), stamped=True,
    priority=12, phase="serving", request=True, cut_ok=True,
    sources=(("sglang 0.5.5", "sglang/multimodal_gen/runtime/entrypoints/diffusion_generator.py:295"),
             ("sglang 0.5.5", "sglang/multimodal_gen/runtime/entrypoints/diffusion_generator.py:344"),
             ("sglang 0.5.7", "sglang/multimodal_gen/runtime/entrypoints/diffusion_generator.py:221"),
             ("sglang 0.5.7", "sglang/multimodal_gen/runtime/entrypoints/diffusion_generator.py:260"),
             ("sglang 0.5.7", "sglang/multimodal_gen/runtime/utils/logging_utils.py:473"),
             ("0.5.13", "sglang/multimodal_gen/runtime/entrypoints/diffusion_generator.py:263"),
             ("0.5.13", "sglang/multimodal_gen/runtime/entrypoints/diffusion_generator.py:352"),
             ("0.5.23", "sglang/multimodal_gen/runtime/entrypoints/diffusion_generator.py:338"),
             ("0.5.23", "sglang/multimodal_gen/runtime/entrypoints/diffusion_generator.py:453"),
             ("0.5.23", "sglang/multimodal_gen/runtime/utils/logging_utils.py:571")))

SIGNATURES = [DIFFUSION_REQUEST_FAILED, DIFFUSION_GENERATOR_REQUEST_FAILED]
