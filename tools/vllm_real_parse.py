"""Parse ``vllm serve`` command lines with a real vLLM release's own CLI (a one-off check).

Run with the Python of a throwaway venv (``tools/vllm_flags.py --setup`` makes
it) and ``VLLM_TARGET_DEVICE=cpu``; reads a JSON list of argv lists (each
``["vllm", "serve", MODEL, ...]``) on stdin and prints one JSON line per argv:
``{"argv", "parsed": "accepted" | "refused", "error", "speculative_config"}``.

Each argv goes through the release's real ``vllm`` entry point,
``vllm.entrypoints.cli.main.main`` with ``sys.argv`` set to it: the whole
top-level parser (FlexibleArgumentParser's rewriting of ``_`` names, dotted
JSON keys, the ``serve`` subparser) and ``ServeSubcommand.validate``; only the
subcommand's ``cmd``, which would start the server, is replaced by one that
records the parsed arguments. Then the ``--speculative-config`` JSON is given
to the real ``SpeculativeConfig(**dict)``, as ``create_speculative_config``
does (vllm/engine/arg_utils.py:2172 (0.34.0)) but without the target's
``ModelConfig`` (that needs the checkpoint), and the outcome is recorded as it
comes: constructed, or the exception's first line.
"""

import contextlib
import io
import json
import sys

PARSED = {}


def _record(args) -> None:
    PARSED["args"] = args


def parse(argv: list[str]) -> dict:
    import vllm.entrypoints.cli.main as cli
    import vllm.entrypoints.cli.serve as serve

    serve.ServeSubcommand.cmd = staticmethod(_record)
    PARSED.clear()
    sys.argv = list(argv)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            cli.main()
    except SystemExit as stop:
        text = err.getvalue().strip().splitlines()
        said = [line for line in text if "error" in line.lower()] or text or [str(stop)]
        return {"argv": argv, "parsed": "refused", "exit": stop.code, "error": said[0]}
    except Exception as exc:  # noqa: BLE001 - a one-off reports what the release raises
        return {"argv": argv, "parsed": "refused", "error": f"{type(exc).__name__}: "
                + (str(exc).splitlines() or [""])[0][:400]}
    args = PARSED.get("args")
    return {"argv": argv, "parsed": "accepted" if args is not None else "no serve args",
            "speculative_config": speculative(getattr(args, "speculative_config", None))}


def speculative(config) -> str | None:
    if not config:
        return None
    from vllm.config import SpeculativeConfig

    try:
        SpeculativeConfig(**{k.replace("-", "_"): v for k, v in config.items()})
    except Exception as exc:  # noqa: BLE001
        lines = [line for line in str(exc).splitlines() if line.strip()]
        return f"{type(exc).__name__}: " + " | ".join(lines[:3])[:400]
    return "constructed"


def main() -> None:
    for argv in json.load(sys.stdin):
        print(json.dumps(parse(argv)), flush=True)


if __name__ == "__main__":
    main()
