"""ddlab.crashes.frames: the phase frames show, in a traceback, faulthandler and py-spy."""

from __future__ import annotations

import pytest

from ddlab.crashes.frames import frame_phases, shows_startup


@pytest.mark.parametrize("frames, phases", [
    ('  File "/x/sglang/srt/managers/scheduler.py", line 9, in event_loop_normal', ["serving"]),
    ('  File "/x/sglang/srt/managers/scheduler.py", line 9 in event_loop_overlap', ["serving"]),
    ("    event_loop_pp (scheduler_pp_mixin.py:95)", ["serving"]),
    ("    scheduler.event_loop_normal()", ["serving"]),
    ('  File "/x/sglang/srt/managers/scheduler.py", line 461 in watchdog_thread', ["serving"]),
    ('  File "/x/sglang/srt/entrypoints/http_server.py", line 1, in _wait_and_warmup', ["ready"]),
    ('  File "/x/sglang/srt/layers/linear.py", line 1254 in weight_loader', ["load_weights"]),
    ('  File "/x/sglang/srt/managers/scheduler.py", line 771, in init_cache_with_memory_pool\n'
     '  File "/x/sglang/srt/managers/scheduler.py", line 9, in event_loop_normal', ["memory_pool"]),
], ids=["traceback", "faulthandler", "py-spy", "cut-call", "watchdog-thread", "warmup", "loader",
        "startup-wins"])
def test_frames_show_a_phase(frames, phases):
    assert frame_phases(frames) == phases


def test_a_constructor_of_the_servers_parts_is_startup():
    assert shows_startup('  File "/x/sglang/srt/distributed/parallel_state.py", line 255, in __init__')
    assert not shows_startup('  File "/x/sglang/srt/managers/schedule_batch.py", line 9, in __init__')
