"""A test runner's report after a traceback: never more of the exception's message (round 93).

unittest's TextTestRunner.run prints separator2, 70 dashes, then "Ran N test(s) in T s" after the errors it
lists (CPython 3.11.7 Lib/unittest/runner.py:36, :226-229; printErrorList's own separator2 comes before each
traceback, :156). A harness's lines after it (its command line, flags included) are not the error's words:
:mod:`.tracebacks` ends an open message at either line.
"""

from __future__ import annotations

import re

__all__ = ["UNITTEST_REPORT"]

UNITTEST_REPORT = re.compile(r"^(?:-{70}\s*$|Ran \d+ tests? in \d+\.\d+s\s*$)")
