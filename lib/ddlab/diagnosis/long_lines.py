"""A pasted line too long to be read whole, read by its head and its tail.

Contract: :func:`bounded` takes one line's text and returns it, or, past :data:`LIMIT` characters,
its first :data:`HEAD` and last :data:`TAIL` characters with a note of how many were left out between
them; :func:`ddlab.diagnosis.logtext.split_lines` applies it to every line a paste holds, after the
glued writers are split apart, so every reader downstream (signatures, tracebacks, phases, facts)
sees the bounded line.

Why: an exception whose message is the repr of a large structure prints it on one line. aiter copying
composable_kernel into its JIT folder without write permission raised ``shutil.Error`` with the list of
every file it could not copy, one 1.7 MB line (round 98's h98006; Python's shutil.copytree gathers the
errors and raises ``Error(errors)``, CPython 3.12 Lib/shutil.py:554). Every signature searches every
line, so that one line cost about 10 s of diagnosis, where the whole corpus of 3,400 logs costs about 45.
What decides a reading stands at a line's start (the exception's name, a logger's stamp, the first
items of a list) or at its end (the last item, an exit); the middle of such a line repeats its start.
The longest line a server writes that ddlab reads for facts is SGLang's ``server_args=ServerArgs(...)``
(about 19,000 characters in 0.5.23); :data:`LIMIT` leaves it whole, with room for releases to come.
"""

from __future__ import annotations

__all__ = ["bounded", "LIMIT", "HEAD", "TAIL"]

LIMIT = 65_536  # characters a line keeps whole
HEAD, TAIL = 49_152, 16_384  # what a longer line keeps of its start and its end


def bounded(text: str) -> str:
    """``text``, or its head and tail with the count of characters left out between them."""
    if len(text) <= LIMIT:
        return text
    return f"{text[:HEAD]} [... ddlab left out {len(text) - HEAD - TAIL:,} characters of this line ...] {text[-TAIL:]}"
