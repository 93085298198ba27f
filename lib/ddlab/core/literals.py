"""Python literals read out of text (a server's logged arguments, a notebook's defaults), one
thread at a time.

CPython 3.11's AST builder keeps its recursion depth in state the threads of one interpreter
share (python/cpython#106905 and its follow-ups, fixed in later releases): two threads reading
literals at once can make one of them raise ``SystemError: AST constructor recursion depth
mismatch``. A pool sweep diagnoses each host's log in a thread of its own, and this SystemError
once took a host out of a sweep in the suite (2026-12-04). A lock costs nothing here: the texts
are small and the readers are few.
"""

from __future__ import annotations

import ast
import threading

__all__ = ["literal_eval"]

_ONE_AT_A_TIME = threading.Lock()


def literal_eval(text: str):
    """:func:`ast.literal_eval`, serialised across threads (its errors pass through)."""
    with _ONE_AT_A_TIME:
        return ast.literal_eval(text)
