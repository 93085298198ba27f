"""The ``ddlab`` console script's entry: :func:`ddlab.cli.main`, with a Ctrl-C that comes
while ddlab's modules are still being imported (the first fraction of a second, longer on
a fresh clone, where each module is compiled on first use) said in one line, exit 130.

The entry is the top layer (above :mod:`ddlab.cli`, which never imports it). Only the
package itself (``ddlab/__init__``: the version and the error hook) is imported before the
guard; :mod:`ddlab.cli` guards everything after its own imports.
"""

from __future__ import annotations

import sys

def main() -> int:
    try:
        from ddlab.cli import main as cli_main
    except KeyboardInterrupt:
        from ddlab.core.interrupts import STARTING

        print(STARTING, file=sys.stderr)
        return 130
    return cli_main()
