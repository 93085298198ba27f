"""ddlab.core.literals: Python literals read one thread at a time (CPython 3.11's AST builder
shares its recursion depth between threads; a pool sweep's hosts read their logs in threads)."""

from __future__ import annotations

import threading

import pytest

from ddlab.core import literals


def test_a_second_reader_waits_for_the_first_and_then_reads():
    got = []
    with literals._ONE_AT_A_TIME:  # a reader in the middle of its literal
        reader = threading.Thread(target=lambda: got.append(literals.literal_eval("{'a': [1, (2, 3)]}")))
        reader.start()
        reader.join(0.3)
        assert reader.is_alive() and got == [], "it waits while another thread reads"
    reader.join(5)
    assert got == [{"a": [1, (2, 3)]}]


def test_its_errors_are_ast_literal_evals_and_the_lock_is_let_go():
    with pytest.raises(ValueError):
        literals.literal_eval("open('x')")
    with pytest.raises(SyntaxError):
        literals.literal_eval("{'a': ")
    assert literals.literal_eval("0.5") == 0.5, "the next reader is not blocked"
