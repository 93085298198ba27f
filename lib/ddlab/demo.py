"""``make demo`` / ``ddlab demo``: the main job on the embedded default.

Against the local host and ddlab's own target server: a sweep over DDTree
budget {4, 16, 32} x top-k cap {1, 4} x CUDA graphs {on, off}, plus the
no-speculation baseline and one extra variant carrying the field's replay
fault (``--debug-drop-verify-field num_token_non_padded``) to show crash
capture; then the plot notebook over that sweep. Both run through ``ddlab
run`` (executed notebook + HTML report each, listed in outputs/index.html).
The last line printed is the plot report's path.
"""

from __future__ import annotations

import json
import socket

from ddlab.runner import run_notebook

__all__ = ["DEMO_PARAMETERS", "main"]

DEMO_PARAMETERS = {
    "host": "local",
    "budget": [4, 16, 32],
    "topk_cap": [1, 4],
    "cuda_graph": [True, False],
    "extra": [{"debug_drop_verify_field": "num_token_non_padded"}],
    "requests": 4,
    "max_new_tokens": 64,
    "timeout_s": 180,
}


def free_port() -> int:
    """A TCP port free on loopback now (the demo must not collide with a real server)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    params = {**DEMO_PARAMETERS, "fixed": {"port": free_port()}}
    sweep = run_notebook("sweep", params, name="demo")
    print(f"sweep: {sweep.status}: {sweep.headline}\n  report: {sweep.report}")
    sweep_id = json.loads((sweep.run_dir / "verdict.json").read_text()).get("sweep_id", "latest")
    if sweep.status != "ok":
        print(sweep.report)
        return 1
    plot = run_notebook("plot", {"sweep": sweep_id}, name="demo")
    print(f"plot: {plot.status}: {plot.headline or 'figures of the sweep above'}")
    print(plot.report)
    return 0 if plot.status == "ok" else 1
