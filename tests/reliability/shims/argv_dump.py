"""A server entry point that records what it was started with, then idles.

``python -m argv_dump ANY ARGS``: copies its own ``/proc/self/cmdline`` and
``/proc/self/environ`` (the kernel's record of the real argv and environment,
after systemd or the process manager did their quoting) into
``$ARGV_DUMP_DIR/<pid>.cmdline`` / ``.environ``, then sleeps until stopped.
"""

import os
import time
from pathlib import Path

folder = Path(os.environ["ARGV_DUMP_DIR"])
for what in ("cmdline", "environ"):
    data = Path(f"/proc/self/{what}").read_bytes()
    tmp = folder / f".{os.getpid()}.{what}"
    tmp.write_bytes(data)
    tmp.rename(folder / f"{os.getpid()}.{what}")
print(f"argv_dump: recorded pid {os.getpid()}", flush=True)
while True:
    time.sleep(3600)
