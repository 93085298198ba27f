"""Parsers: a ``--reasoning-parser`` the model's tokenizer cannot take (round 66).

With a reasoning parser, SGLang wraps the grammar backend in ``ReasonerGrammarBackend``, whose constructor
encodes the parser's think-end token with the model's tokenizer; 0.5.12 and 0.5.13 refuse a token that is not
exactly one token of it. The model runs without the parser: a server argument this model cannot take,
``bad_argument``. Spliced into :mod:`.launch`'s list.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "REASONING_PARSER_TOKENIZER"]

# (round 66) with a --reasoning-parser, the grammar backend wraps itself in ReasonerGrammarBackend, which
# encodes the parser's think-end token with the model's tokenizer and refuses one that is not a single token:
# "think_end_token '</think>' must encode to exactly one token for constrained reasoning." (0.5.12 / 0.5.13
# constrained/reasoner_grammar_backend.py:237-239; "... could not be encoded by the tokenizer." :231-234; built
# by create_grammar_backend, base_grammar_backend.py:306, in the scheduler's GrammarManager, 0.5.13
# managers/scheduler.py:1598). The parser does not fit this model's tokenizer; 0.5.19 matches a multi-token
# think end (reasoner_grammar_backend.py:52-53)
_THINK_END_TOKEN = (r"\bthink_end_token '[^'\n]*' (?:must encode to exactly one token for constrained reasoning"
                    r"|could not be encoded by the tokenizer)")
REASONING_PARSER_TOKENIZER = Signature(
    "reasoning_parser_tokenizer", "bad_argument", "the reasoning parser's think-end token does not fit the tokenizer",
    ("The `--reasoning-parser` names a think-end token (</think>) that this model's tokenizer does not encode "
     "as one token, and this release's constrained reasoning needs exactly one: drop `--reasoning-parser` "
     "(a model that does not think), pick the parser made for this model, or run SGLang 0.5.19 or later, "
     "which matches a think end of several tokens.",),
    patterns=(_THINK_END_TOKEN,), types=r"(?:\w+\.)*ValueError", priority=92, phase="launch",
    sources=(("0.5.13", "sglang/srt/constrained/reasoner_grammar_backend.py:239"),
             ("0.5.12", "sglang/srt/constrained/reasoner_grammar_backend.py:234"),
             ("0.5.13", "sglang/srt/constrained/base_grammar_backend.py:306"),
             ("0.5.13", "sglang/srt/managers/scheduler.py:1598"),
             ("0.5.19", "sglang/srt/constrained/reasoner_grammar_backend.py:53")))

SIGNATURES = [REASONING_PARSER_TOKENIZER]
