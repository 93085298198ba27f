"""The ``ddlab`` console script's entry: :func:`ddlab.cli.main`, with a Ctrl-C that comes
while ddlab's modules are still being imported (the first fraction of a second, longer on
a fresh clone, where each module is compiled on first use) said in one line, exit 130.

While the imports run, a SIGINT is only noted, never raised inside whatever code runs at
that moment: raised inside an import's weakref callback, Python prints "Exception ignored
in ..." with a traceback and the command goes on as if no one had pressed Ctrl-C. One
noted is acted on once the imports are done (:func:`ddlab.core.interrupts.starting`, which
:mod:`ddlab.cli` also holds while it builds its parser).

The entry is the top layer (above :mod:`ddlab.cli`, which never imports it). Only the
package itself (``ddlab/__init__``: the version and the error hook) and
:mod:`ddlab.core.interrupts` are imported before the hold.
"""

from __future__ import annotations

import sys

from ddlab.core.interrupts import STARTING, starting


def main() -> int:
    try:
        with starting():
            from ddlab.cli import main as cli_main
    except KeyboardInterrupt:  # noted while importing (or raised as the hold began)
        print(STARTING, file=sys.stderr)
        return 130
    return cli_main()
