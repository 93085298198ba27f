"""The ``ddlab`` console script's first module, outside the ``ddlab`` package on purpose.

A Ctrl-C in the first moments of a command (under load the first few tenths of a second)
used to land while ``ddlab/__init__`` and its imports ran, before :mod:`ddlab.start` could
hold it: Python printed a KeyboardInterrupt traceback of ~20 frames. Importing this module
imports no package, so the first thing the command does is to note a SIGINT instead of
raising it; one noted by the time :mod:`ddlab.start` is loaded is said in ddlab's one line
(exit 130), and from there :mod:`ddlab.start` holds interrupts while the CLI loads.
"""

import signal

_noted: list[int] = []
signal.signal(signal.SIGINT, lambda signum, frame: _noted.append(signum))


def main() -> int:
    from ddlab.start import main as start
    from ddlab.core.interrupts import STARTING

    signal.signal(signal.SIGINT, signal.default_int_handler)
    if _noted:
        import sys

        print(STARTING, file=sys.stderr)
        return 130
    return start()
