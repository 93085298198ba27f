"""Parse server command lines with a real SGLang release's own parser.

Contract::

    python tools/sglang_parse.py VERSION < commands.json
    # commands.json: a list of argv lists (the flags after `-m sglang.launch_server`)
    # prints one JSON object per argv: {"argv": [...], "ok": bool, "error": str | null}

The parser is the wheel's ``ServerArgs.add_cli_args``, built by
``tools/sglang_slice.py`` in a child ``python -I -S`` (the wheel's unmodified
code, nothing else installed), then ``parse_args`` as ``prepare_server_args``
calls it. What it checks is what argparse checks: option names (with
argparse's prefix matching), values against ``type`` and ``choices``, nargs.
It does not run ``ServerArgs.__post_init__`` (that needs torch and a GPU).
This is the one-off check the recorded tables stand in for in the tests
(:class:`ddlab.config.sglang.FlagTable` reads argv the same way).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

_CHILD = r"""
import argparse, contextlib, importlib, io, json, logging, sys, zipfile
sys.path.insert(0, {tools!r})
import sglang_slice as s
sys.path.insert(0, {msgspec!r})
finder = s._WheelFinder(zipfile.ZipFile({wheel!r}))
sys.meta_path.append(finder)
server_args = importlib.import_module(s.SERVER_ARGS)
logging.disable(logging.CRITICAL)
out = []
for argv in json.load(sys.stdin):
    parser = argparse.ArgumentParser(prog="sglang.launch_server", exit_on_error=False)
    server_args.ServerArgs.add_cli_args(parser)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(argv)
        out.append({{"argv": argv, "ok": True, "error": None}})
    except (argparse.ArgumentError, SystemExit) as exc:
        said = str(exc) if isinstance(exc, argparse.ArgumentError) else err.getvalue().strip()
        out.append({{"argv": argv, "ok": False, "error": said.splitlines()[-1] if said else "exit"}})
print(json.dumps(out))
"""


def parse(version: str, commands: list[list[str]]) -> list[dict]:
    """Each argv of ``commands`` through ``version``'s parser: ok, or argparse's error."""
    import sglang_flags as flags

    wheel = flags.fetch_wheel(f"sglang=={version}", flags.DEFAULT_CACHE)
    code = _CHILD.format(tools=str(HERE), msgspec=str(flags._msgspec_dir(flags.DEFAULT_CACHE)),
                         wheel=str(wheel))
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], input=json.dumps(commands),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"sglang {version}: the parser did not run:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    results = parse(args[0], json.load(sys.stdin))
    for row in results:
        print(json.dumps(row))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
