"""ddlab's probe ``sitecustomize``: arm the probe hook, then run the sitecustomize it shadows.

ddlab writes this file as ``sitecustomize.py``, next to ``ddlab_probe_hook.py``, into
a folder the deploy puts first on ``PYTHONPATH`` (``ddlab.probes.install_files``).
Python's ``site`` imports it at every interpreter start, multiprocessing spawn
children included. It imports the hook (which arms itself from ``DDLAB_PROBES``),
then finds the next ``sitecustomize`` on ``sys.path`` -- skipping every folder that
holds a ``ddlab_probe_hook.py``, so two probe folders cannot chain to each other --
and runs it as ``sitecustomize``, so the host's own one still runs.

A failure to arm the hook is one ``DDLAB_PROBE`` line and never stops the
interpreter. Standard library only. Its body runs only as ``sitecustomize``:
imported under any other name it does nothing.
"""

if __name__ == "sitecustomize":

    def _ddlab_probe_boot():
        import importlib.machinery
        import importlib.util
        import json
        import os
        import sys

        try:
            import ddlab_probe_hook  # noqa: F401  (arms itself from DDLAB_PROBES)
        except Exception as exc:  # a probe never stops a server
            record = {"pid": os.getpid(), "rank": None, "target": None, "mode": None,
                      "event": "failed", "call": None,
                      "error": {"type": type(exc).__name__, "message": str(exc)[:300]}}
            sys.stderr.write("DDLAB_PROBE " + json.dumps(record) + "\n")
            sys.stderr.flush()
        others = [p for p in sys.path
                  if not os.path.isfile(os.path.join(p or os.curdir, "ddlab_probe_hook.py"))]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module  # what `import sitecustomize` gives from now on
        spec.loader.exec_module(module)

    _ddlab_probe_boot()
    del _ddlab_probe_boot
