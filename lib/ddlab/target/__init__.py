"""ddlab's own target: a small PyTorch tree-speculative inference server that speaks SGLang.

ddlab's deploy / poll / crash-capture / sweep / plot loop must run on a
machine with no GPU host, and its tests must drive a real server, so ddlab
ships one: a 3.2 M-parameter byte-level transformer and a DFlash-like block
drafter (trained by ``python -m ddlab.target.train``, shipped as fp16
safetensors in ``weights/``), decoded greedily and losslessly with no
speculation, a DFlash chain, or a DDTree best-first tree verified in one
batched forward pass, behind SGLang's flag names, HTTP API and log lines
(SGLang 0.5.23's by default, 0.4.x's with ``--log-format 0.4``), or behind vLLM
0.34.0's with ``--dialect vllm``. Every figure it reports comes from decoding it did.

Run it as ``python -m ddlab.target --port P ...`` or ``ddlab target ...``.

    args.py               SGLang-named flags -> ServerArgs
    launcher.py           the launcher's checks and lines, before the scheduler
    lifecycle.py          how the process ends (dead scheduler, SIGQUIT, SIGTERM)
    log_lines.py          SGLang's log lines and error texts, per generation
    model.py              Target and Drafter networks
    checkpoint.py         built-in weights / weight directories
    tree.py               DDTree heap, DFlash chain, tree mask, verify walk
    spec.py               one batched draft + verify + accept step
    memory.py             device memory budget, KV pool
    cuda_graph_runner.py  static verify buffers, CUDA graph capture / replay
    model_runner.py       startup phases, forward passes
    engine.py             requests, batching scheduler, serving log lines
    metrics.py            Prometheus text under SGLang's metric names
    server.py             endpoints; main: launcher, engine, uvicorn's start, warmup
    openai_api.py         /v1/models, /v1/completions, /v1/chat/completions
    requests.py           what a request may ask, for both HTTP APIs
    vllm_args.py          --dialect vllm: vLLM 0.34.0's serve flags -> ServerArgs
    vllm_lines.py         vLLM's log format, lines and crash texts, each with its source line
    vllm_server.py        --dialect vllm: vLLM's startup order, endpoints, /metrics, stats lines
    vllm_graphs.py        --dialect vllm: graph inputs as vLLM copies them, its death in vLLM's frames
    train.py              training of both networks
"""

__all__ = ["main"]


def main(argv=None, prog="python -m ddlab.target") -> int:
    """Run the server (blocks); see ``ddlab.target.args`` for the flags, ``vllm_args`` for
    ``--dialect vllm``'s."""
    import sys

    from ddlab.target.vllm_args import dialect_of

    dialect, argv = dialect_of(sys.argv[1:] if argv is None else argv)
    # the flags are parsed before the server's modules import torch (about 0.9 s of CPU):
    # a refused flag exits at once
    if dialect == "vllm":
        from ddlab.target.vllm_args import parse_vllm_args

        parsed = parse_vllm_args(argv, f"{prog} --dialect vllm")
        from ddlab.target.vllm_server import main as serve_vllm

        return serve_vllm(parsed)
    if dialect != "sglang":
        print(f"{prog}: error: argument --dialect: invalid choice: {dialect!r} (choose from 'sglang', "
              "'vllm')", file=sys.stderr)
        return 2
    from ddlab.target.args import parse_command_line

    args, warnings = parse_command_line(argv, prog)
    from ddlab.target.server import main as serve

    return serve(args, warnings)
