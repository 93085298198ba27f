"""The ``ddlab`` console script's entry: :func:`ddlab.cli.main`, with a Ctrl-C that comes
while ddlab's modules are still being imported (the first fraction of a second, longer on
a fresh clone, where each module is compiled on first use) said in one line, exit 130.

While the imports run, a SIGINT is only noted, never raised inside whatever code runs at
that moment: raised inside an import's weakref callback, Python prints "Exception ignored
in ..." with a traceback and the command goes on as if no one had pressed Ctrl-C. One
noted is acted on once the imports are done. :mod:`ddlab.cli` holds it the same way while
it builds its parser (:func:`ddlab.core.interrupts.starting`).

The entry is the top layer (above :mod:`ddlab.cli`, which never imports it). Only the
package itself (``ddlab/__init__``: the version and the error hook) is imported before the
hold.
"""

from __future__ import annotations

import signal
import sys


def main() -> int:
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        from ddlab.cli import main as cli_main
    except KeyboardInterrupt:  # one raised before the hold (the interpreter's own start-up)
        received.append(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        from ddlab.core.interrupts import STARTING

        print(STARTING, file=sys.stderr)
        return 130
    return cli_main()
