"""ServerArgs' own asserts: its size checks read alone, with no frame of ``server_args.py`` (round 84).

SGLang checks the parallel sizes and the prefill chunk against each other while it builds the server
arguments, with asserts whose message names the ServerArgs fields: "tp_size must be divisible by number of
nodes". A launcher that prints only the exception line leaves the message alone (no frame for
:data:`.launch.SERVER_ARGS_ERROR`'s context); the message is SGLang's own words, the launch's flags are what
do not fit: ``bad_argument``. Spliced into :mod:`.launch`'s list.
"""

from __future__ import annotations

from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "SIZES_NOT_DIVISIBLE"]

# the ServerArgs fields these asserts compare (each a flag of the same name: tp_size is --tp-size); "number of
# nodes" is --nnodes
_FIELD = r"(?:tp|dp|pp|ep|attn_cp|attn_dp|moe_dp|moe_ep)_size|chunked_prefill_size|page_size"
_DIVISOR = rf"(?:number of nodes|(?:{_FIELD})(?: \* (?:{_FIELD}))*)"
# (round 84) ServerArgs.check_server_args: assert (tp_size * pp_size) % nnodes == 0, "tp_size must be divisible by
# number of nodes" (0.2.12 sglang/srt/server_args.py:445, 0.4.10.post2 :1913, 0.5.16 :7579; 0.5.19
# arg_groups/validation_hook.py:36, 0.5.23 :180), "chunked_prefill_size must be divisible by page_size" (0.5.23
# arg_groups/validation_hook.py:245); the attention and MoE groups' "tp_size must be divisible by attn_cp_size",
# "... by attn_dp_size * attn_cp_size", "... by moe_dp_size" (0.5.23 arg_groups/parallel_hook.py:160, :163, :173)
_SIZES = rf"(?<![\w.])(?:{_FIELD}) must be divisible by {_DIVISOR}\s*$"


def _flag(name: str) -> str:
    return "`--nnodes`" if name == "number of nodes" else f"`--{name.replace('_', '-')}`"


def _sizes_detail(found: Found) -> str | None:
    match = regex(rf"({_FIELD}) must be divisible by ({_DIVISOR})", 0).search(found.text)
    if not match:
        return None
    names = [match[1], *match[2].split(" * ")]
    pp = " (the check is on `--tp-size` x `--pp-size`)" if match[2] == "number of nodes" else ""
    return f"The message names {', '.join(_flag(n) for n in names)}{pp}."


SIZES_NOT_DIVISIBLE = Signature(
    "server_args_sizes", "bad_argument", "the server arguments' sizes do not divide",
    ("SGLang's argument check refused the sizes before it started: the first size the message names must "
     "be a multiple of the others (each node takes an equal share of the tensor- and pipeline-parallel "
     "ranks). Set the flags the message names so they divide, or drop the one a launcher added.",),
    types=r"(?:\w+\.)*AssertionError", patterns=(_SIZES,),
    lines=(rf"^\s*(?:\w+\.)*AssertionError: {_SIZES}",), priority=86, phase="launch", detail=_sizes_detail,
    sources=(("0.5.23", "sglang/srt/arg_groups/validation_hook.py:180"),
             ("0.5.19", "sglang/srt/arg_groups/validation_hook.py:36"),
             ("0.5.16", "sglang/srt/server_args.py:7579"),
             ("0.4.10.post2", "sglang/srt/server_args.py:1913"),
             ("0.5.23", "sglang/srt/arg_groups/validation_hook.py:245"),
             ("0.5.23", "sglang/srt/arg_groups/parallel_hook.py:160")))

SIGNATURES = [SIZES_NOT_DIVISIBLE]
