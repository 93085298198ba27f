"""SGLang's log lines and error texts, per release generation: the words the target prints.

Contract: ``generation(name)`` returns the ``Generation`` that ``--log-format``
names: ``0.5.23`` (the default: SGLang 0.5.20+, checked against the 0.5.23
wheel) or ``0.4`` (0.4.x, what the target printed before 0.5.23 existed). A
``Generation`` words every line the target logs at startup and while serving,
and every SGLang-worded error it raises, from figures the caller measured;
nothing here decides or measures anything. Citations (file:line in the real
wheels) are in docs/sglang.md; the lines are copied, not paraphrased, so that
ddlab's diagnosis reads the target's log as it reads a real server's.

Where SGLang's words would lie about the target, the target's truth wins:
the KV dtype is the pool's real dtype (fp32), the attention backend is
``torch_native`` (PyTorch SDPA), the device in ``Context:`` is the real one.

Kept free of torch: ``python -m ddlab.target`` imports it on its start path.
"""

from __future__ import annotations

import os

__all__ = ["Generation", "GENERATIONS", "LOG_FORMATS", "generation", "CAPTURE_FAILED_MSG_04",
           "CAPTURE_FAILED_MSG_0523", "NOT_ENOUGH_MEMORY"]

_GITHUB = "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
CAPTURE_FAILED_MSG_04 = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    + _GITHUB)
CAPTURE_FAILED_MSG_0523 = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
    "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. "
    "(Not recommended. Huge performance loss)\n"
    + _GITHUB)
# The same words in 0.4.x and 0.5.14+ (only 0.5.10 appended "Current value: ...").
NOT_ENOUGH_MEMORY = "Not enough memory. Please try to increase --mem-fraction-static."

# ServerArgs fields the 0.5.14+ names replaced: (0.5.23 name, 0.4 name or None if absent).
_RENAMED = (("cuda_graph_max_bs_decode", "cuda_graph_max_bs"), ("cuda_graph_bs_decode", "cuda_graph_bs"),
            ("cuda_graph_backend_decode", None), ("cuda_graph_backend_prefill", None),
            ("cuda_graph_max_bs_prefill", None), ("cuda_graph_bs_prefill", None))


def _gb(x: float) -> str:
    return f"{x:.2f} GB"


class Generation:
    """The 0.5.23 wording; ``Generation04`` overrides what 0.4.x says differently."""

    name = "0.5.23"
    capture_failed_msg = CAPTURE_FAILED_MSG_0523
    graph_runner = "DecodeCudaGraphRunner"  # the class model_runner builds (cuda_graph_runner.py)

    def args_view(self, args) -> dict:
        """The server args as this release names them (``server_args=`` and /server_info)."""
        view = args.to_dict()
        view["cuda_graph_config"] = {"decode": {"backend": args.cuda_graph_backend_decode,
                                                "max_bs": args.cuda_graph_max_bs_decode,
                                                "bs": args.cuda_graph_bs_decode},
                                     "prefill": {"backend": args.cuda_graph_backend_prefill,
                                                 "max_bs": args.cuda_graph_max_bs_prefill,
                                                 "bs": args.cuda_graph_bs_prefill}}
        return view

    def server_args(self, args) -> str:
        return f"server_args={self.args_view(args)!r}"

    def attention_note(self) -> str | None:
        """The launcher's attention default (0.5.23 arg_groups/overrides.py:1133-1138)."""
        return "Attention backend not specified. Use torch_native backend by default."

    def speculative_notes(self, args) -> list[str]:
        """The speculative hook's notes (0.5.23 arg_groups/speculative_hook.py:438-446)."""
        if args.speculative and args.max_running_requests is None:
            return ["Max running requests is reset to 48 for speculative decoding. You can override "
                    "this by explicitly setting --max-running-requests."]
        return []

    def deprecated(self, option: str, replacement: str) -> str | None:
        """``print_deprecated_warning``: a WARNING in ANSI yellow."""
        return (f"\033[1;33m'{option}' is deprecated and will be removed in a future release. "
                f"Use '{replacement}' instead.\033[0m")

    # --- the launcher and the process's end --------------------------------------------

    model_info_path = "/model_info"  # the warmup's first request (http_server.py:2374)
    sigterm_stops_server = True  # the drained server stops uvicorn and exits 0 (0.5.23 tokenizer_manager.py:3559-3570)

    def entrypoint_warning(self, module: str, entrypoint: str) -> str | None:
        """``python -m``'s UserWarning (launch_server.py:71-77), ``warnings.warn``'s message."""
        return (f"'python -m {module}' is still supported, but '{entrypoint}' is the recommended "
                f"entrypoint.\n  Example: {entrypoint} --model-path <model> [options]")

    def kill_tree(self, pid: int, include_parent: bool) -> str | None:
        """``kill_process_tree``'s first words (sglang/srt/utils/common.py:2523-2526)."""
        return f"kill_process_tree called: parent_pid={pid}, include_parent={include_parent}, pid={pid}"

    # the launcher's handler until the tokenizer manager's first request (engine.py:1976-1982),
    # then the tokenizer manager's (tokenizer_manager.py:2452-2459, :4072-4075); asyncio calls
    # a loop.add_signal_handler callback with no arguments, so signum and frame are None
    sigquit_launch = "Received sigquit from a child process. It usually means the child failed."
    sigquit_running = "SIGQUIT received. signum=None, frame=None. It usually means one child failed."
    sigterm = "SIGTERM received. signum=None frame=None. Draining requests and shutting down..."

    def gracefully_exiting(self, rids: list) -> str:
        """The SIGTERM watchdog's drain line (tokenizer_manager.py:3534-3536)."""
        return (f"Gracefully exiting... Remaining number of requests {len(rids)}. "
                f"Remaining requests remaining_rids={rids!r}.")

    def prefill_graph_disabled(self) -> str | None:
        """``capture_prefill_graph`` with the prefill backend disabled (cuda_graph_setup.py:495-500)."""
        return ("Disable prefill CUDA graph because cuda_graph_config resolved prefill.backend='disabled' "
                "(e.g. via --cuda-graph-backend-prefill=disabled or auto-disable rules).")

    def draft_runner_ready(self, algorithm: str) -> str | None:
        """DFLASH's second init line (dflash_worker_v2.py:560-566): the target's drafter has a
        learned mask embedding, no mask token."""
        if algorithm != "DFLASH":
            return None
        return ("DFLASH draft runner ready. mask_token=None, mask_token_id=None, "
                "mask_token_id_override=None, noise_embed_scale=1.0")

    def init_begin(self) -> list[str]:
        return ["Init parallel begin."]

    def init_end(self, device: str, gpu_id: int, elapsed_s: float, used_gb: float) -> list[str]:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        return [f"Context: device={device} gpu_id={gpu_id} CUDA_VISIBLE_DEVICES={visible} tp_rank=0",
                f"Init parallel ends. elapsed={elapsed_s:.2f} s",
                f"Memory baseline taken. mem usage={_gb(used_gb)}"]

    def load_end(self, elapsed_s: float, arch: str, dtype: str, avail_gb: float, used_gb: float) -> str:
        return (f"Load weight end. elapsed={elapsed_s:.2f} s, type={arch}, avail mem={_gb(avail_gb)}, "
                f"mem usage={_gb(used_gb)}.")

    def kv_allocated(self, dtype: str, tokens: int, k_gb: float, v_gb: float) -> str:
        return (f"KV Cache is allocated. dtype: {dtype}, #tokens: {tokens}, K size: {_gb(k_gb)}, "
                f"V size: {_gb(v_gb)}")

    # Hooks the vLLM dialect words differently (vllm_lines); SGLang's texts, or nothing.

    def load_begin(self, avail_gb: float) -> str | None:
        return f"Load weight begin. avail mem={_gb(avail_gb)}"

    def model_loaded(self, used_bytes: float, elapsed_s: float) -> str | None:
        return None

    def memory_pool_end(self, avail_gb: float) -> str | None:
        return f"Memory pool end. avail mem={_gb(avail_gb)}"

    def kv_available(self, nbytes: int) -> str | None:
        return None

    def kv_capacity(self, device: str, tokens: int, max_model_len: int, concurrency: float) -> str | None:
        return None

    def kv_pool_error(self, rest_bytes: int, needed_bytes: int, max_model_len: int,
                      estimated_max_len: int) -> Exception:
        """A KV pool that cannot hold one request (the same words in 0.4 and 0.5.23)."""
        return RuntimeError(NOT_ENOUGH_MEMORY)

    def capture_error(self, need_bytes: int, avail_bytes: int, total_bytes: int) -> Exception | None:
        """The error static buffers that do not fit raise (None: the target's RuntimeError,
        inside SGLang's ``Capture cuda graph failed`` wrapper)."""
        return None

    def cpu_static_buffers(self, bs_list, tokens) -> str | None:
        return (f"CPU device: static buffers allocated for bs {bs_list} x {tokens} tokens/req; "
                "the forward runs from them without CUDA graph capture")

    def max_total(self, *, tokens, chunked, max_prefill, running, context_len, avail_gb) -> str | None:
        return (f"max_total_num_tokens={tokens}, chunked_prefill_size={chunked}, "
                f"max_prefill_tokens={max_prefill}, max_running_requests={running}, "
                f"context_len={context_len}, available_gpu_mem={avail_gb:.2f} GB")

    longer_context_env = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
    dialect = "sglang"

    def log_scheduler_crash(self, logger, formatted_traceback: str) -> None:
        """The scheduler thread's last words (0.5.23 scheduler.py's ``run_scheduler_process``)."""
        logger.error(f"Scheduler hit an exception: {formatted_traceback}")

    def draft_runner(self, algorithm: str, block_size: int, drafter_arch: str) -> str | None:
        """The DFLASH worker's init line (DDTree's own line is ``spec.describe``)."""
        if algorithm != "DFLASH":
            return None
        return (f"Initialized DFLASH draft runner. attention_backend=torch_native, model={drafter_arch}, "
                f"block_size={block_size}, draft_window_size=None, compact_cache=False")

    # SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN when unset (0.5.23 environ.py:320: EnvBool(False))
    longer_context_default = "false"
    truthy = ("true", "1", "yes", "y")  # EnvBool.parse, environ.py:144-150

    def longer_context(self, asked: int, derived: int) -> tuple[str, str]:
        """(the warning when a longer ``--context-length`` is allowed, the ValueError's text
        when not): 0.5.23 sglang/srt/configs/model_config.py:1298-1316."""
        msg = (f"Warning: User-specified context_length ({asked}) is greater than the derived "
               f"context_length ({derived}). This may lead to incorrect model outputs or CUDA "
               "errors. Note that the derived context_length may differ from "
               "max_position_embeddings in the model's config.")
        return msg, (f"{msg} To allow overriding this maximum, set the env var "
                     "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")

    def capture_begin(self, role: str, speculative: bool, tokens_per_req: int, backend: str,
                      avail_gb: float) -> str:
        return (f"Capture {role} {'verify' if speculative else 'decode'} CUDA graph begin. "
                f"backend={backend}, num_tokens_per_req={tokens_per_req}, avail mem={_gb(avail_gb)}")

    def capture_end(self, role: str, speculative: bool, bs: list, elapsed_s: float, used_gb: float,
                    avail_gb: float) -> str:
        return (f"Capture {role} {'verify' if speculative else 'decode'} CUDA graph end. bs={bs}, "
                f"elapsed={elapsed_s:.2f} s, mem usage={_gb(used_gb)}, avail mem={_gb(avail_gb)}.")

    def prefill(self, n_seq, n_new, usage, running, queue, input_tok_s) -> str:
        return (f"Prefill batch, #new-seq: {n_seq}, #new-token: {n_new}, #cached-token: 0, "
                f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queue}, "
                f"#pending-token: 0, cuda graph: False, input throughput (token/s): {input_tok_s:.2f}")

    def decode(self, running, tokens, usage, accept, graph, gen_tok_s, queue) -> str:
        """``accept``: None without speculation, else (accept len, accept rate)."""
        spec = f"accept len: {accept[0]:.2f}, accept rate: {accept[1]:.2f}, " if accept else ""
        return (f"Decode batch, #running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, "
                f"{spec}cuda graph: {graph}, gen throughput (token/s): {gen_tok_s:.2f}, #queue-req: {queue}")


class Generation04(Generation):
    """SGLang 0.4.x (0.4.10.post2)."""

    name = "0.4"
    capture_failed_msg = CAPTURE_FAILED_MSG_04
    graph_runner = "CudaGraphRunner"

    def args_view(self, args) -> dict:
        view = args.to_dict()
        for new, old in _RENAMED:
            value = view.pop(new)
            if old:
                view[old] = value
        return view

    def server_args(self, args) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.args_view(args).items())
        return f"server_args=ServerArgs({inner})"

    def attention_note(self) -> str | None:
        return None

    def speculative_notes(self, args) -> list[str]:
        return []

    def deprecated(self, option: str, replacement: str) -> str | None:
        return None  # the old names are 0.4's own; the new ones are accepted without a word

    model_info_path = "/get_model_info"  # 0.4.10.post2 http_server.py:976-1001
    sigterm_stops_server = False  # 0.4's drained server kills its own tree, itself too (tokenizer_manager.py:1494)
    # 0.4's running-phase handler keeps the launcher's words (tokenizer_manager.py:1992-1996)
    sigquit_running = Generation.sigquit_launch

    def entrypoint_warning(self, module: str, entrypoint: str) -> str | None:
        return None  # 0.4's launch_server.py warns nothing

    def kill_tree(self, pid: int, include_parent: bool) -> str | None:
        return None  # 0.4's kill_process_tree logs nothing (utils.py:860)

    def gracefully_exiting(self, rids: list) -> str:
        return f"Gracefully exiting... remaining number of requests {len(rids)}"  # tokenizer_manager.py:1486

    def prefill_graph_disabled(self) -> str | None:
        return None

    def draft_runner_ready(self, algorithm: str) -> str | None:
        return None

    def init_begin(self) -> list[str]:
        return ["Init torch distributed begin."]

    def init_end(self, device: str, gpu_id: int, elapsed_s: float, used_gb: float) -> list[str]:
        return [f"Init torch distributed ends. mem usage={_gb(used_gb)}"]

    def load_end(self, elapsed_s: float, arch: str, dtype: str, avail_gb: float, used_gb: float) -> str:
        return (f"Load weight end. type={arch}, dtype={dtype}, avail mem={_gb(avail_gb)}, "
                f"mem usage={_gb(used_gb)}.")

    def kv_allocated(self, dtype: str, tokens: int, k_gb: float, v_gb: float) -> str:
        return f"KV Cache is allocated. #tokens: {tokens}, K size: {_gb(k_gb)}, V size: {_gb(v_gb)}"

    def draft_runner(self, algorithm: str, block_size: int, drafter_arch: str) -> str | None:
        if algorithm != "DFLASH":
            return None
        return f"Initialized DFLASH worker. block_size={block_size}, num_draft_tokens={block_size}"

    longer_context_default = "True"  # 0.4.10.post2 model_config.py:163-165: allowed unless set false
    truthy = ("true", "1")  # get_bool_env_var, utils.py:175-190

    def longer_context(self, asked: int, derived: int) -> tuple[str, str]:
        """0.4.10.post2 sglang/srt/configs/model_config.py:166-176."""
        head = (f"User-specified context_length ({asked}) is greater than the derived "
                f"context_length ({derived}). This may lead to incorrect model outputs or CUDA errors.")
        return (f"Warning: {head}",
                f"{head} Note that the derived context_length may differ from "
                "max_position_embeddings in the model's config. To allow overriding this maximum, "
                "set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")

    def capture_begin(self, role: str, speculative: bool, tokens_per_req: int, backend: str,
                      avail_gb: float) -> str:
        draft = "draft " if role == "draft" else ""
        return (f"Capture {draft}cuda graph begin. This can take up to several minutes. "
                f"avail mem={_gb(avail_gb)}")

    def capture_end(self, role: str, speculative: bool, bs: list, elapsed_s: float, used_gb: float,
                    avail_gb: float) -> str:
        draft = "draft " if role == "draft" else ""
        return (f"Capture {draft}cuda graph end. Time elapsed: {elapsed_s:.2f} s. "
                f"mem usage={_gb(used_gb)}. avail mem={_gb(avail_gb)}.")

    def prefill(self, n_seq, n_new, usage, running, queue, input_tok_s) -> str:
        return (f"Prefill batch. #new-seq: {n_seq}, #new-token: {n_new}, #cached-token: 0, "
                f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queue}, ")

    def decode(self, running, tokens, usage, accept, graph, gen_tok_s, queue) -> str:
        spec = f"accept len: {accept[0]:.2f}, " if accept else ""
        return (f"Decode batch. #running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, "
                f"{spec}cuda graph: {graph}, gen throughput (token/s): {gen_tok_s:.2f}, "
                f"#queue-req: {queue}, ")


GENERATIONS = {g.name: g for g in (Generation(), Generation04())}
LOG_FORMATS = tuple(GENERATIONS)


DIALECTS: dict[str, Generation] = {}  # other servers' words, registered by their module (vllm_lines)


def generation(name: str) -> Generation:
    return GENERATIONS.get(name) or DIALECTS[name]
