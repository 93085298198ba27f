"""The vLLM 0.34.0 source of every ``[file.py:N]`` the target's vLLM dialect prints (the table
test_vllm_dialect.py checks against the unpacked wheel, as tools/target_lines.py tables SGLang's)."""

# Each [file.py:N] the dialect prints: the file inside the vLLM 0.34.0 wheel and the logger's
# format string there (tests/target/test_vllm_dialect.py reads the wheel and checks both: a
# logging call is at that line and the string's parts, SOURCE_PARTS where it is built from
# several, are in its literals nearby; and the target's lines fit the string).
SOURCE_PARTS = {
    "startup.py:38": ("vLLM server version %s, serving model %s", "version ${w}%s${r}", "model   ${w}%s${r}"),
    "loggers.py:335": ("Engine {self.engine_index:03d}: ", "Avg prompt throughput: %.1f tokens/s",
                       "Avg generation throughput: %.1f tokens/s", "Running: %d reqs", "Waiting: %d reqs",
                       "%s KV cache usage: %.1f%%"),
}
SOURCES = {
    "startup.py:38": ("vllm/entrypoints/common/startup.py", "vLLM server version %s, serving model %s"),
    "startup.py:96": ("vllm/entrypoints/common/startup.py", "non-default args: %s"),
    "model.py:761": ("vllm/config/model.py", "Resolved architecture: %s"),
    "model.py:2214": ("vllm/config/model.py", "Using max model len %s"),
    "scheduler.py:354": ("vllm/config/scheduler.py", "Chunked prefill is enabled with max_num_batched_tokens=%d."),
    "core.py:153": ("vllm/v1/engine/core.py", "Initializing a V1 LLM engine (v%s) with config: %s"),
    "default_loader.py:543": ("vllm/model_executor/model_loader/default_loader.py",
                              "Loading weights took %.2f seconds"),
    "model_runner.py:441": ("vllm/v1/worker/gpu/model_runner.py",
                            "Model loading took %s GiB memory and %.6f seconds"),
    "gpu_worker.py:795": ("vllm/v1/worker/gpu_worker.py", "Available KV cache memory: %s GiB"),
    "kv_cache_utils.py:1168": ("vllm/v1/core/kv_cache_utils.py",
                               "%s KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx"),
    "model_runner.py:1149": ("vllm/v1/worker/gpu/model_runner.py",
                             "Skipping encoder and decoder CUDA graph capture. To enable encoder capture, "
                             "ensure `cudagraph_mm_encoder` is enabled; to enable decoder capture, ensure "
                             "`cudagraph_mode` is not `NONE`."),
    "model_runner.py:1216": ("vllm/v1/worker/gpu/model_runner.py", "Graph capturing finished in %.0f secs, took %.2f GiB"),
    "core.py:458": ("vllm/v1/engine/core.py", "init engine (profile, create kv cache, warmup model) took %.2f s"),
    "core.py:1757": ("vllm/v1/engine/core.py", "EngineCore failed to start."),
    "core.py:1759": ("vllm/v1/engine/core.py", "EngineCore encountered a fatal error."),
    "async_llm.py:957": ("vllm/v1/engine/async_llm.py", "AsyncLLM output_handler failed."),
    "entry.py:135": ("vllm/entrypoints/launchers/api_server/entry.py", "Supported tasks: %s"),
    "entry.py:139": ("vllm/entrypoints/launchers/api_server/entry.py", "Starting vLLM server on %s"),
    "launcher.py:188": ("vllm/entrypoints/launchers/launcher.py", "Available routes are:"),
    "launcher.py:197": ("vllm/entrypoints/launchers/launcher.py", "Route: %s, Methods: %s"),
    "loggers.py:335": ("vllm/v1/metrics/loggers.py", "Engine %03d: Avg prompt throughput: %.1f tokens/s, "
                       "Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, "
                       "%s KV cache usage: %.1f%%"),
    "metrics.py:120": ("vllm/v1/spec_decode/metrics.py",
                       "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f tokens/s, "
                       "Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens, "
                       "Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%"),
    "model.py:2722": ("vllm/config/model.py", "%s %s"),
}
