"""vLLM: its CUDA graphs' crash texts (capture, a batch outside the compiled ranges, a replay's
inputs, V0's batch size with no captured graph; (round 90) the piecewise compile's cache finding no hash of the graph
inductor compiled), mapped onto ddlab's kinds with advice in vLLM's flags; cited as in :mod:`.vllm`."""

from __future__ import annotations

import re

from ddlab.device_crashes import npu
from ddlab.vllm_crashes.library import V0 as _V0, voiced
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "CAPTURE", "PIECEWISE_RANGE", "REPLAY_INPUTS", "GRAPH_BATCH_MISSING", "NPU_CAPTURE",
           "GRAPH_BLOCK_TABLES", "COMPILE_HASH_MISSING", "HPU_CAPTURE"]

# (round 14) also torch's own graph capture, entered by vLLM's `with torch.cuda.graph(...)`
# (compilation/cuda_graph.py:315 (0.30.0)): torch/cuda/graphs.py's CUDAGraph.capture_begin / capture_end
# (round 52) or cut on V0's call of capture_model at its decorator's frame: capture_model is
# @torch.inference_mode() (0.5.1 worker/model_runner.py:909-910, 0.6.4.post1 :1385-1386), whose
# decorate_context only enters the mode and calls it (torch 2.13.0 utils/_contextlib.py:121-124)
# (round 53) or cut in torch.cuda.graph's own frames: its __enter__ begins the capture and its __exit__ ends it
# (torch 2.13.0 cuda/graphs.py:437-462, :471-477), entered by vLLM's `with torch.cuda.graph(cudagraph,
# pool=self.graph_pool):` (0.8.5.post1 compilation/backends.py:681)
_CAPTURE_FRAMES = (r"(?:(?:,| line \d+) in (?:capture_model|_capture_cudagraphs|capture_graph"
                   r"|_capture_\w*graph\w*|capture|capture_begin|capture_end)"
                   r"|torch[/\\]cuda[/\\]graphs\.py\", line \d+, in __(?:enter|exit)__"
                   r"|\.capture_model\([^\n]*\n[ \t]*File \"[^\"\n]*torch[/\\]utils[/\\]_contextlib\.py\", "
                   r"line \d+, in decorate_context)\s*$")
_OOM = r"out of memory|OutOfMemoryError"
_GRAPHS_OFF = ("`--enforce-eager` (no CUDA graphs) confirms it and keeps serving; then capture "
               "fewer sizes, e.g. `--compilation-config {\"cudagraph_capture_sizes\":[1,2,4,8]}`, or "
               "only piecewise graphs: `--compilation-config {\"cudagraph_mode\":\"PIECEWISE\"}`.")

CAPTURE = Signature(
    "vllm_capture_failed", "cuda_graph_capture", "capturing CUDA graphs failed",
    ("An operation in the model cannot be captured into a CUDA graph (or faulted while it was). "
     + _GRAPHS_OFF,),
    patterns=(r"operation not permitted when stream is capturing", r"cudaErrorStreamCapture\w+",
              r"operation failed due to a previous error during capture", r"\bstream is capturing\b",
              r"CUDA graph capture", r"capture (?:is )?(?:invalidated|unsupported)", r"."),
    # torch's texts that only a capture writes, also as lines (a paste without the frames)
    # (the CUDA runtime's strings for the stream-capture errors 900-907, e.g. in NCCL's
    # "NCCL WARN Cuda failure '...'" line when a collective runs inside a capture)
    lines=(r"operation not permitted when stream is capturing", r"cudaErrorStreamCapture\w+",
           r"operation failed due to a previous error during capture", r"captures_underway",
           r"dependency created on uncaptured work in another stream",
           r"operation would make the legacy stream depend on a capturing blocking stream",
           r"capture sequence contains a fork that was not joined"),
    context=(_CAPTURE_FRAMES,), absent=(_OOM,), priority=80, phase="graph_capture",
    sources=(("0.30.0", "vllm/v1/worker/gpu_model_runner.py:6830"),
             ("0.33.0", "vllm/v1/worker/gpu_model_runner.py:6571"),
             ("0.34.0", "vllm/v1/worker/gpu/model_runner.py:1141"),
             ("0.34.0", "vllm/v1/worker/gpu/cudagraph_utils.py:459"),
             (_V0, "vllm/worker/model_runner.py:1386"),
             ("torch 2.14.1", "c10/cuda/CUDAGraphsC10Utils.h (stream capture status)")))

# the piecewise backend dispatches a batch by its token count to a compiled range; one outside
# every range fails this assert (vllm/compilation/piecewise_backend.py:361 (0.34.0))
PIECEWISE_RANGE = Signature(
    "vllm_piecewise_range", "cuda_graph_replay", "a batch's token count is outside every compiled graph range",
    ("A batch had more tokens than the compiled / captured graphs cover (a speculative step adds "
     "its draft tokens to each request). Keep serving with `--enforce-eager`; else make the ranges "
     "cover the batch: `--max-num-batched-tokens` at least the batch, fewer "
     "`num_speculative_tokens` in `--speculative-config`.",),
    patterns=(r"Shape: \d+ out of considered ranges", r"range_entry is not None"),
    context=(r"assert range_entry is not None|Shape: \d+ out of considered ranges",), cut_ok=True,
    priority=76, running=True,
    sources=(("0.30.0", "vllm/compilation/piecewise_backend.py:362"),
             ("0.33.0", "vllm/compilation/piecewise_backend.py:361"),
             ("0.34.0", "vllm/compilation/piecewise_backend.py:361")))

# A replay's inputs, where vLLM copies them into the captured graph's static buffers: V1's
# compiler-managed buffers, each input of symbolic (batch) size copied before the piecewise
# graphs run (copy_and_call, compilation/backends.py:83-98 (0.34.0)); V0's CUDAGraphRunner.forward,
# its batch copied into input_buffers, then replayed (worker/model_runner.py:1850-1880
# (0.6.4.post1)); CUDAGraphWrapper's replay itself, which with debug logging first checks the
# inputs' addresses against the capture's (compilation/cuda_graph.py:345-357 (0.34.0)). It copies
# nothing (its docstring, :160-166): a frame through it that is no replay proves nothing. (round 101) The multimodal
# encoder's graphs (--compilation-config cudagraph_mm_encoder) copy each replay's inputs into the buffers captured for
# the token budget the same way, in _run_budget_graph ("padding_logic(buf, src)", its default _copy_padded_buffer's
# "dst[: src.shape[0]].copy_(src)"; v1/worker/encoder_cudagraph.py:359-370, :321-326 (0.28.0)), then replay them;
# (round 103) a development tree (v1/worker/gpu/mm/encoder_cudagraph.py) copies each into its buffer's first rows
# there itself ("buf[:n].copy_(src)"), the same copy of a replay's inputs.
_ENCODER_FRAME = r'encoder_cudagraph\.py", line \d+, in _run_budget_graph'
_REPLAY_INPUT_FRAMES = (r'backends\.py", line \d+, in copy_and_call\s*$'
                        rf'|{_ENCODER_FRAME}\s*\n'
                        r'\s*(?:padding_logic|buf(?:\[[^\]\n]*\])?\.copy_)\('
                        r'|^\s*self\.input_buffers\[["\']\w+["\']\]\.copy_\('
                        r'|cuda_graph\.py", line \d+, in __call__\s*\n\s*(?:entry\.cudagraph\.replay\(\)'
                        r"|assert new_input_addresses)")
_COPY_FRAME_RE = r'backends\.py", line \d+, in copy_and_call'


def _replay_inputs_detail(found: Found) -> str | None:
    said = []
    if regex(_COPY_FRAME_RE, re.M).search(found.chain_text):
        said.append("The failing copy is the compiler's (`cudagraph_copy_inputs`), made before the "
                    "piecewise graphs run: FULL_DECODE_ONLY, which has none, is the mode to try first.")
    encoder = regex(_ENCODER_FRAME).search(found.chain_text)
    if encoder:
        said.append("The failing copy is the multimodal encoder's graphs' (`cudagraph_mm_encoder`): "
                    "`--compilation-config {\"cudagraph_mm_encoder\":false}` runs the encoder eagerly.")
    if regex(r"NoneType").search(found.text):
        said.append("An input was None: the batch the model runner or the drafter built lacks a tensor "
                    "(`VLLM_LOGGING_LEVEL=DEBUG` makes CUDAGraphWrapper check each replay's inputs "
                    "against the capture's).")
    sizes = regex(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)").search(found.text)
    if sizes and not encoder:
        said.append(f"The copy saw sizes {sizes[1]} and {sizes[2]}: the batch is larger than the "
                    "graph's static buffers (a speculative step adds its draft tokens).")
    return " ".join(said) or None


REPLAY_INPUTS = Signature(
    "vllm_replay_inputs", "cuda_graph_replay", "a CUDA graph replay got inputs it was not captured with",
    ("The inputs copied into a captured CUDA graph's static buffers for its replay were missing, or "
     "of another size or place than at capture.",
     "`--enforce-eager` (no CUDA graphs) confirms it and keeps serving; then narrow the graphs with "
     "`--compilation-config {\"cudagraph_mode\":\"FULL_DECODE_ONLY\"}` (full graphs for decode "
     "batches only, no piecewise graphs) or `--compilation-config {\"cudagraph_mode\":\"PIECEWISE\"}` "
     "(piecewise graphs only).",),
    patterns=(r"NoneType", r"size of tensor a \(\d+\) must match the size of tensor b",
              r"Input addresses for cudagraphs are different during replay"),
    context=(_REPLAY_INPUT_FRAMES,), priority=77, phase="serving", detail=_replay_inputs_detail,
    sources=(("0.34.0", "vllm/compilation/backends.py:94"), ("0.34.0", "vllm/compilation/backends.py:87"),
             ("0.33.0", "vllm/compilation/backends.py:90"), ("0.30.0", "vllm/compilation/backends.py:89"),
             ("0.34.0", "vllm/compilation/cuda_graph.py:357"), ("0.34.0", "vllm/compilation/cuda_graph.py:348"),
             ("0.33.0", "vllm/compilation/cuda_graph.py:361"), ("0.30.0", "vllm/compilation/cuda_graph.py:362"),
             (_V0, "vllm/worker/model_runner.py:1851"), ("0.34.0", "vllm/v1/worker/encoder_cudagraph.py:584"),
             ("0.34.0", "vllm/v1/worker/encoder_cudagraph.py:526"),
             ("vllm 0.28.0", "vllm/v1/worker/encoder_cudagraph.py:370 (padding_logic(buf, src)), :326")))

# (round 68) cudaErrorCapturedEvent (907; hipErrorCapturedEvent): an event recorded in a capturing stream queried or
# synchronized on, as torch's NCCL watchdog does, which logs it on its own line (SGLang's capture_failed reads it)
_CAPTURED_EVENT = r"operation not permitted on an event last recorded in a capturing stream"
# CUDA's stream-capture error strings are written only while a stream captures (the runtime's
# errors 900-907): the exception names the capture even when its frames are cut off
_CAPTURE_TEXTS = (r"operation not permitted when stream is capturing", r"cudaErrorStreamCapture\w+",
                  r"operation failed due to a previous error during capture",
                  r"dependency created on uncaptured work in another stream",
                  r"operation would make the legacy stream depend on a capturing blocking stream",
                  r"capture sequence contains a fork that was not joined",
                  _CAPTURED_EVENT,
                  # torch's copy between the host and the GPU refuses pageable host memory only while the
                  # current stream captures (aten/src/ATen/native/cuda/Copy.cu, copy_kernel_cuda: the
                  # TORCH_CHECK under currentStreamCaptureStatus() != None), e.g. a .tolist() in a captured forward
                  r"Cannot copy between CPU and CUDA tensors during CUDA graph capture")
CAPTURE_TEXT = Signature(
    "vllm_capture_unsupported_op", "cuda_graph_capture",
    "an operation that cannot be captured ran during a CUDA graph capture",
    ("An operation ran that a CUDA graph cannot capture (a collective outside the graph's stream, a "
     "host sync, an allocation). " + _GRAPHS_OFF,),
    patterns=_CAPTURE_TEXTS, lines=(_CAPTURED_EVENT,), absent=(_OOM,), priority=79, phase="graph_capture",
    sources=(("torch 2.14.1", "c10/cuda/CUDAGraphsC10Utils.h (stream capture status)"),
             ("cuda runtime", "cudaErrorStreamCapture* (errors 900-907), their strings as torch prints them"),
             ("torch (pytorch/pytorch 007aa8a)", "aten/src/ATen/native/cuda/Copy.cu (copy_kernel_cuda: Cannot copy "
                                                 "between CPU and CUDA tensors during CUDA graph capture unless the "
                                                 "CPU tensor is pinned.)")))

# a traceback cut inside the capture frames: the capture failed; what raised is cut off
CAPTURE_CUT = Signature(
    "vllm_capture_cut", "cuda_graph_capture", "capturing CUDA graphs failed (the traceback is cut)",
    ("The traceback ends inside vLLM's CUDA graph capture; the exception line below it is cut off (an "
     "out-of-memory there is `cuda_oom`: get the whole log to tell). " + _GRAPHS_OFF,),
    # (a whole exception in these frames is vllm_capture_failed's, ranked far above)
    patterns=(r".",), context=(_CAPTURE_FRAMES,), absent=(_OOM,), cut_ok=True, priority=30,
    phase="graph_capture",
    sources=(("0.34.0", "vllm/v1/worker/gpu/cudagraph_utils.py:459"),
             ("0.34.0", "vllm/v1/worker/gpu/model_runner.py:1141"),
             ("0.30.0", "vllm/v1/worker/gpu_model_runner.py:6830"),
             ("vllm 0.8.5.post1", "vllm/compilation/backends.py:681")))


# V0 runs a decode batch through the graph captured for its (padded) size, looked up in the
# runner's dict of graphs by batch size (worker/model_runner.py:1637, spec_decode/draft_model_runner.py:249
# (0.6.4.post1); model_runner.py:1683 (0.7.3); 0.4: `self.graph_runners[graph_batch_size]`): a
# KeyError raised at that lookup is a batch size no graph was captured for (V0 captures sizes up to
# `--max-num-seqs`, model_runner.py:998 (0.6.4.post1); a speculative step's scorer expands the batch by
# the draft tokens)
GRAPH_BATCH_MISSING = Signature(
    "vllm_graph_batch_missing", "cuda_graph_replay", "no CUDA graph was captured for the decode batch's size",
    ("The decode batch has a size for which no CUDA graph was captured (V0 captures batch sizes up "
     "to `--max-num-seqs`; speculative decoding's scorer runs each request with its draft tokens, a "
     "larger batch). `--enforce-eager` (no CUDA graphs) confirms it and keeps serving; else a larger "
     "`--max-num-seqs` or fewer `num_speculative_tokens` in `--speculative-config`.",),
    types=r"KeyError", patterns=(r".",),
    context=(r"graph_runners\[[^\n]*\n(?:[ \t]+(?!File \")[^\n]*\n){0,3}?[ \t]*KeyError\b",),
    priority=78, running=True, phase="serving",
    sources=((_V0, "vllm/worker/model_runner.py:1637"), (_V0, "vllm/spec_decode/draft_model_runner.py:249"),
             ("0.7.3", "vllm/worker/model_runner.py:1683")))

# (round 23) vllm-ascend captures its ACL graphs with torch_npu's NPUGraph (`with torch.npu.graph(aclgraph,
# ...)`, vllm_ascend 0.11.0rc0 compilation/acl_graph.py:137, :153), as SGLang's NPU graph runners do: SGLang's
# signature, in vLLM's words
NPU_CAPTURE = voiced(npu.NPU_CAPTURE, (
    "torch_npu could not begin (or end) capturing an ACL graph on the NPU: the runtime refused the "
    "capture (its error code names why; CANN's device log, ASCEND_GLOBAL_LOG_LEVEL=1, has the record). "
    "`--enforce-eager` (no ACL graphs) confirms it and keeps serving; then a vllm-ascend / CANN / "
    "torch_npu release whose graph mode supports this model and parallel layout.",),
    sources=(("vllm_ascend 0.11.0rc0", "vllm_ascend/compilation/acl_graph.py:153 (torch.npu.graph)"),))

# (round 31) V0 copies a graphed decode batch's block tables into the captured graphs' buffer
# (attention/backends/utils.py:233 (0.6.4.post1), :215 (0.6.3.post1), :240 (0.7.3), under
# `if use_captured_graph`),
# sized [max batch size, max_seq_len_to_capture // block size] (worker/model_runner.py:1015-1017, :1177-1179
# (0.6.4.post1)): numpy's broadcast ValueError there is a request's block table wider than that buffer
GRAPH_BLOCK_TABLES = Signature(
    "vllm_graph_block_tables", "cuda_graph_replay",
    "a request's block table is wider than the captured CUDA graphs' buffer",
    ("A decode batch run through the captured CUDA graphs holds a request whose block table is longer than "
     "the graphs' block-table buffer (sized by max_seq_len_to_capture). `--enforce-eager` (no CUDA "
     "graphs) confirms it and keeps serving; else raise V0's max_seq_len_to_capture engine argument to the "
     "model's maximum length.",),
    types=r"ValueError", patterns=(r"could not broadcast input array",),
    context=(r"input_block_tables\[i, :len\(block_table\)\] = block_table[^\n]*\n"
             r"(?:[ \t]+(?!File \")[^\n]*\n){0,3}?[ \t]*ValueError\b",),
    priority=78, running=True, phase="serving",
    sources=((_V0, "vllm/attention/backends/utils.py:233"), ("0.7.3", "vllm/attention/backends/utils.py:240"),
             (_V0, "vllm/worker/model_runner.py:1015")))

# (round 72) NCCL refusing a collective on a capturing stream: where NCCL was built with a CUDA runtime older than 11.3
# or the driver is older than R465, ncclCudaGetCapturingGraph warns "NCCL cannot be captured in a graph if either it
# wasn't built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465." and returns ncclInvalidUsage
# only when the stream's capture status is not None (NVIDIA/nccl src/misc/strongstream.cc, the log's own
# strongstream.cc:53): the collective was being captured. V0 captures its graphs in the worker's initialize_cache
# (0.5.1 worker/worker.py:200, :214 _warm_up_model, :230 capture_model; worker/model_runner.py:928 the capture's
# memory notice, :980 `with graph_capture()`), whose all-reduce runs pynccl in the capture
# (distributed/parallel_state.py:263); the worker then raises "NCCL error: invalid usage"
_NCCL_UNCAPTURABLE = r"NCCL WARN NCCL cannot be captured in a graph\b"
NCCL_CAPTURE = Signature(
    "vllm_nccl_uncapturable", "cuda_graph_capture", "NCCL cannot be captured into a CUDA graph here",
    ("NCCL refused to run its collective inside the CUDA graph being captured: this NCCL was built "
     "with a CUDA runtime older than 11.3, or the driver is older than R465. Install an NCCL built for "
     "the installed CUDA (the `nvidia-nccl-cu12` wheel that torch pins) or update the driver; "
     "`--enforce-eager` (no CUDA graphs) starts the server meanwhile.",),
    patterns=(_NCCL_UNCAPTURABLE,), lines=(_NCCL_UNCAPTURABLE,), priority=81, phase="graph_capture",
    sources=(("NVIDIA/nccl", "src/misc/strongstream.cc:53 (ncclCudaGetCapturingGraph: WARN, return ncclInvalidUsage "
                             "while the stream captures)"),
             ("vllm 0.5.1", "vllm/worker/worker.py:214"), ("vllm 0.5.1", "vllm/worker/worker.py:230"),
             ("vllm 0.5.1", "vllm/worker/model_runner.py:980"),
             ("vllm 0.5.1", "vllm/distributed/parallel_state.py:263")))

# (round 90) vLLM compiles each piece of the split graph through its InductorAdaptor, which learns the compiled
# graph's cache key and file by patching inductor's internals for the call (compiled_fx_graph_hash, compile_fx_inner's
# output, FxGraphCache's load on torch 2.5: 0.9.0 compilation/compiler_interface.py:285-355, :357-410), then asserts
# it got them: "failed to get the hash of the compiled graph", "failed to get the file path of the compiled graph"
# (:414-418, skipped under VLLM_DISABLE_COMPILE_CACHE=1 in 0.9.0, :414; unconditional in 0.7.3, :267-270; gone by
# 0.9.2). torch's dynamo wraps the assert as BackendCompilerFailed (backend='<vllm.compilation.backends.VllmBackend
# ...>' raised: AssertionError: ...): the model's torch.compile failed in vLLM's compiler backend, in the profile run
# that first calls the compiled model, kernel_compile as inductor's own failures (compilers.py INDUCTOR_FAILED)
_NO_HASH = r"\bfailed to get the (?:hash|file path) of the compiled graph\b"
COMPILE_HASH_MISSING = Signature(
    "vllm_compile_hash_missing", "kernel_compile", "vLLM's compile cache found no hash of the graph inductor compiled",
    ("vLLM's torch.compile backend compiled a piece of the model with inductor but its cache hooks (patched into "
     "inductor's internals) saw no cache key or file for it: the installed torch's inductor did not go through the "
     "calls this vLLM patches (a torch other than the one vLLM pins, or inductor's FX graph cache bypassed for this "
     "graph). Start with `VLLM_DISABLE_COMPILE_CACHE=1` (vLLM 0.9.0 skips this check then), or without compilation "
     "(`--enforce-eager`, or `-O0`); `pip show torch vllm` and the torch that vLLM release pins tell whether they "
     "fit.",),
    patterns=(_NO_HASH,), lines=(_NO_HASH,), priority=80,
    sources=(("vllm 0.9.0", "vllm/compilation/compiler_interface.py:415"),
             ("vllm 0.9.0", "vllm/compilation/compiler_interface.py:414"),
             ("vllm 0.9.0", "vllm/compilation/compiler_interface.py:363"),
             ("vllm 0.7.3", "vllm/compilation/compiler_interface.py:267")))

# (round 104) Gaudi's vLLM (HabanaAI vllm-fork) captures HPU graphs in its warmup (the worker's initialize_cache ->
# _warm_up_model -> the model runner's warmup_model: habana_worker.py in 2024's tree, vllm-fork 95af70093
# vllm/worker/hpu_worker.py:351, :372), and Habana's PyTorch bridge refuses, while a graph is being
# captured in lazy mode, what it cannot record: a collective of its non-lazy HCCL process group ("collective nonSFG is
# not supported during hpu graph capturing", ProcessGroupHCCL::collective) and an op falling back to the CPU ("cpu
# fallback is not supported during hpu graph capturing"), each a HABANA_ASSERT thrown as a RuntimeError
# (HabanaAI/gaudi-pytorch-bridge 5a56187 python_packages/habana_frameworks/torch/distributed/hccl/ProcessGroupHCCL.cpp
# :464-466, hpu_ops/cpu_fallback.cpp:103-105, pytorch_helpers/habana_helpers/logging.h:306). The fork's guide asks for
# PT_HPU_ENABLE_LAZY_COLLECTIVES=true with HPU graphs and tensor parallelism (vllm-fork 95af70093 README_GAUDI.md:432)
_HPU_CAPTURE = r"\b(?:collective nonSFG|cpu fallback) is not supported during hpu graph capturing\b"
HPU_CAPTURE = Signature(
    "vllm_hpu_capture_refused", "cuda_graph_capture", "Habana's bridge refused an operation while capturing HPU graphs",
    ("Gaudi's PyTorch bridge refused an operation inside an HPU graph being captured (the warmup captures one per "
     "bucket): a collective of the non-lazy HCCL group (tensor parallelism: set `PT_HPU_ENABLE_LAZY_COLLECTIVES=true`, "
     "as the fork's README_GAUDI.md asks for HPU graphs), or an op that falls back to the CPU. `--enforce-eager` "
     "(no HPU graphs) confirms it and starts the server meanwhile.",),
    patterns=(_HPU_CAPTURE,), lines=(_HPU_CAPTURE,), priority=80, phase="graph_capture",
    sources=(("gaudi-pytorch-bridge (HabanaAI 5a56187)",
              "python_packages/habana_frameworks/torch/distributed/hccl/ProcessGroupHCCL.cpp:466"),
             ("gaudi-pytorch-bridge (HabanaAI 5a56187)", "hpu_ops/cpu_fallback.cpp:105"),
             ("vllm-fork (HabanaAI 95af70093)", "README_GAUDI.md:432 (PT_HPU_ENABLE_LAZY_COLLECTIVES)")))

SIGNATURES = [CAPTURE, PIECEWISE_RANGE, REPLAY_INPUTS, CAPTURE_TEXT, CAPTURE_CUT, GRAPH_BATCH_MISSING,
              GRAPH_BLOCK_TABLES, NPU_CAPTURE, NCCL_CAPTURE, COMPILE_HASH_MISSING, HPU_CAPTURE]
