"""An asyncio loop patcher meeting a loop it cannot patch: two packages in one process that do not fit (round 97).

nest_asyncio (imported and applied by another package or a notebook in the server's process) replaces
``asyncio.run`` and ``get_event_loop`` with versions that patch the loop they find, and refuses any loop that is not
asyncio's own: ``raise ValueError('Can\\'t patch loop of type %s' % type(loop))`` (nest_asyncio 1.5.6
nest_asyncio.py:175, from ``run``'s ``_patch_loop(loop)`` at :31; 1.6.0 :192-193). SGLang's HTTP server runs on
uvloop (0.1.6 sglang/srt/server.py:50 ``asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())``, :358-364
``uvicorn.run(..., loop="uvloop")``), so the server's start meets a ``uvloop.Loop`` the patcher refuses: the
installed packages do not fit together (``dependency_mismatch``), at the HTTP server's start (``ready``). Only the
patcher's sentence naming uvloop's loop."""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["NEST_ASYNCIO_UVLOOP", "SIGNATURES"]

_REFUSED = r"Can't patch loop of type <class 'uvloop\.Loop'>"
NEST_ASYNCIO_UVLOOP = Signature(
    "nest_asyncio_uvloop", "dependency_mismatch", "nest_asyncio cannot patch the server's uvloop event loop",
    ("nest_asyncio, applied in this process by another package (or a notebook, or a wrapper script), patches "
     "asyncio's loops only, and SGLang's HTTP server runs on uvloop: the two do not fit in one process. Find what "
     "calls `nest_asyncio.apply()` (`pip show nest_asyncio` lists what requires it) and launch the server in a "
     "process that does not import it (a plain `python -m sglang.launch_server` outside the notebook), or "
     "uninstall nest_asyncio if nothing there needs it.",),
    types=r"ValueError", patterns=(_REFUSED,), lines=(rf"^ValueError: {_REFUSED}",), priority=79, phase="ready",
    sources=(("nest_asyncio 1.5.6", "nest_asyncio.py:175 (raise ValueError('Can\\'t patch loop of type %s' % "
                                    "type(loop))), :31 (_patch_loop(loop))"),
             ("nest_asyncio 1.6.0", "nest_asyncio.py:192-193"),
             ("sglang 0.1.6", "sglang/srt/server.py:50 (asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())), "
                              ":364 (loop=\"uvloop\")")))

SIGNATURES = [NEST_ASYNCIO_UVLOOP]
