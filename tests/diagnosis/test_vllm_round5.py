"""The rules that round 5 of the vLLM corpus (vf01-vf30, measured once) showed missing.

Each rule is general and cited from vLLM's wheels (0.6.4.post1, 0.30.0, 0.33.0, 0.34.0) or, for a
launcher's prefix, from its text as the log shows it: the round-5 log that showed it is one case, a
text written from the source in another form is the other, and a text beside it that the rule must
not take is a third. SGLang's reading of every SGLang log is unchanged
(test_vllm_diagnosis.test_every_sglang_log_is_read_as_sglang and the SGLang corpus floors).
"""

from __future__ import annotations

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.vllm_log import detect_family, vllm_lines
from fieldkit import read_log, reads, vllm_traceback


# --- the paste's shape -------------------------------------------------------------------

def test_djl_servings_worker_prefix_is_peeled():
    """vf13: DJL Serving (LMI) relays its Python worker's lines as "INFO  PyProcess W-N-model-stdout: "
    (the first line's level cut to "NFO"); under it, pydantic's Value error line of vLLM's config."""
    assert reads(read_log("vf13.log")) == (True, "bad_argument", "launch")
    line = "WARN  PyProcess W-7-llama-stderr: ValueError: x"
    assert [ln.msg for ln in vllm_lines(line)] == ["ValueError: x"]
    # DJL's own lines about the worker (no stream named) are kept whole
    kept = "INFO  PyProcess Model [llama] initialized."
    assert vllm_lines(kept)[0].msg == kept


def test_a_frame_line_a_terminal_wrapped_inside_its_path_is_joined():
    """vf10: a V0 Ray engine's traceback whose paths the terminal wrapped onto lines of their own
    (cut before the exception): a crash, not nothing; launch."""
    assert reads(read_log("vf10.log")) == (True, "unknown", "launch")
    text = vllm_traceback(("vllm/v1/engine/core.py", 86, "__init__", "self._initialize_kv_caches(vllm_config)"),
               ("vllm/v1/worker/gpu_model_runner.py", 3001, "capture_model", "self._capture_cudagraphs("),
               exc="RuntimeError: boom")
    wrapped = text.replace('worker/gpu_model_runner.py"', 'worker/gpu_mo \ndel_runner.py"', 1)
    assert wrapped != text and len(wrapped.splitlines()) == len(text.splitlines()) + 1
    assert [ln.msg for ln in vllm_lines(wrapped)] == [ln.msg for ln in vllm_lines(text)]
    # a frame line cut at the end of a paste stays cut; a whole frame line below one is not joined
    cut = 'ERROR 12-03 10:00:00 [core.py:1000]   File "/usr/lib/python3.12/site-packages/vllm/'
    assert vllm_lines(cut)[0].msg.endswith('vllm/')
    two = cut + '\nERROR 12-03 10:00:00 [core.py:1000]   File "/x.py", line 3, in f\n'
    assert len(vllm_lines(two)) == 2


# --- the draft against the target ---------------------------------------------------------

def test_v0s_vocabulary_assert_is_read_from_its_code_line():
    """vf15: only the assert's code line, "AssertionError" and the process's end; read as SGLang's
    and not a crash before. spec_decode/spec_decode_worker.py:1067 (0.6.4.post1)."""
    text = read_log("vf15.log")
    assert detect_family(text) == "vllm"
    assert reads(text)[:2] == (True, "draft_incompatible")
    stamped = ("ERROR 03-17 10:00:00 engine.py:135]     assert all(vocab_sizes[0] == vocab_size for "
               "vocab_size in vocab_sizes)\nERROR 03-17 10:00:00 engine.py:135] AssertionError\n")
    assert reads(stamped)[:2] == (True, "draft_incompatible")
    # another assert of the same worker is no vocabulary mismatch
    other = stamped.replace("assert all(vocab_sizes[0] == vocab_size for vocab_size in vocab_sizes)",
                            "assert len(proposals) == batch_size")
    assert reads(other, family="vllm")[1] != "draft_incompatible"


# --- the phase from the frames ----------------------------------------------------------

def test_the_method_the_executor_runs_on_its_workers_is_a_frame():
    """vf19: cut in collective_rpc("compile_or_warm_up_model") under _initialize_kv_caches: the
    workers were compiling and capturing graphs (v1/executor/abstract.py:137 (0.34.0)), not sizing the
    KV cache. V0: _run_workers("load_model") (executor/ray_gpu_executor.py:280 (0.6.4.post1))."""
    assert reads(read_log("vf19.log")) == (True, "unknown", "graph_capture")
    v0 = vllm_traceback(("vllm/engine/llm_engine.py", 300, "__init__", "self.model_executor = executor_class("),
             ("vllm/executor/ray_gpu_executor.py", 280, "_init_workers_ray",
              'self._run_workers("load_model",'),
             ("vllm/executor/ray_gpu_executor.py", 400, "_run_workers", "ray_worker_outputs = ray.get("),
             exc=None, head="ERROR 12-03 10:00:00 engine.py:366] ")
    assert reads(v0) == (True, "unknown", "load_weights")
    # a method passed by a variable names nothing
    by_name = v0.replace('self._run_workers("load_model",', "self._run_workers(method,")
    assert reads(by_name) == (True, "unknown", "launch")


def test_a_quantized_layers_repack_after_loading_is_load_weights():
    """vf26: a CUDA OOM in gptq_marlin_repack, which process_weights_after_loading runs inside
    load_model (model_loader/base_loader.py:122, kernels/linear/mixed_precision/marlin.py:95
    (0.34.0))."""
    assert reads(read_log("vf26.log")) == (True, "cuda_oom", "load_weights")
    text = vllm_traceback(("vllm/v1/engine/core.py", 86, "__init__", "self.model_executor = executor_class(vllm_config)"),
               ("vllm/model_executor/model_loader/utils.py", 160, "process_weights_after_loading",
                "quant_method.process_weights_after_loading(module)"),
               exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    assert reads(text) == (True, "cuda_oom", "load_weights")
    # the same OOM in a serving step stays serving
    step = vllm_traceback(("vllm/v1/engine/core.py", 900, "run_busy_loop", "self._process_engine_step()"),
               ("vllm/v1/worker/gpu_model_runner.py", 2500, "execute_model", "hidden = self.model("),
               exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    assert reads(step) == (True, "cuda_oom", "serving")


# --- one request's error ------------------------------------------------------------------

def test_a_prompt_the_openai_server_could_not_prepare_is_one_requests_error():
    """vf21: "Error in preprocessing prompt inputs" and the handler's traceback (cut): the server
    answers that request with an error and serves on (entrypoints/openai/serving_chat.py:170
    (0.6.4.post1))."""
    found = diagnose(read_log("vf21.log"))
    assert (found.crashed, found.kind, found.phase) == (False, "request_error", "serving")
    head = "ERROR 12-03 10:00:00 [serving.py:300] "
    whole = head + "Error in preprocessing prompt inputs\n" + vllm_traceback(
        ("vllm/entrypoints/openai/chat_completion/serving.py", 320, "create_chat_completion",
         "result = await self.render_chat_request(request)"),
        ("jinja2/environment.py", 942, "handle_exception", "raise rewrite_traceback_stack(source=source)"),
        exc="jinja2.exceptions.TemplateError: Conversation roles must alternate", head=head)
    assert reads(whole) == (False, "request_error", "serving")
    # the offline LLM's own _preprocess_chat (entrypoints/common/offline.py) is no request
    offline = vllm_traceback(("vllm/entrypoints/llm.py", 900, "chat", "prompts = self._preprocess_chat("),
                  ("vllm/entrypoints/common/offline.py", 160, "_preprocess_chat", "conversation = parse("),
                  exc="jinja2.exceptions.TemplateError: Conversation roles must alternate", head=head)
    assert reads(offline)[:2] == (True, "unknown")
