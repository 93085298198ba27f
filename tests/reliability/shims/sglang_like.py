"""SGLang's ``--api-key`` in front of ddlab's target.

``python -m sglang_like [--api-key KEY] TARGET FLAGS``: logs
``server_args=ServerArgs(api_key='KEY', ...)`` first, as SGLang's
launch_server does (the key in clear, in the server's own log), waits
``$SHIM_DELAY_S`` seconds (SGLang takes a while before its next line), then
runs ``ddlab.target`` with the other flags. With ``$SHIM_RECORD`` set, it
first writes its real argv and environment there (JSON), for a test to check
what the server was given.
"""

import json
import os
import sys
import time

if os.environ.get("SHIM_RECORD"):
    with open(os.environ["SHIM_RECORD"], "w") as record:
        json.dump({"argv": sys.argv, "env": dict(os.environ)}, record)

argv = sys.argv[1:]
key = None
if "--api-key" in argv:
    at = argv.index("--api-key")
    key = argv[at + 1]
    del argv[at:at + 2]
print(f"server_args=ServerArgs(api_key={key!r}, other_args={len(argv)})", file=sys.stderr,
      flush=True)
time.sleep(float(os.environ.get("SHIM_DELAY_S", "0")))

from ddlab.target import main  # noqa: E402  (after the log line, as SGLang's imports are)

sys.exit(main(argv))
