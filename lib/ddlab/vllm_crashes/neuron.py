"""AWS Neuron's compile cache failing a graph's compile (vLLM round 101).

vllm-neuron loads a model through NxD Inference, which compiles it (``application_base.compile`` ->
``ModelBuilder.trace`` -> libneuronxla's ``neuron_xla_wlo_compile``) through libneuronxla's compile cache. Its
``compile_cache_entry`` raises a failed compile as ``subprocess.CalledProcessError(-1, "", stderr=error_log)``
(the frame's own source line, printed in the traceback; libneuronxla is not published as source): an empty command
and a return code of -1 that no process returned. CPython renders a negative return code as the signal of that
number ("Command '' died with <Signals.SIGHUP: 1>.", Lib/subprocess.py ``CalledProcessError.__str__``, :140-143
(3.11)), so the text names a SIGHUP no one sent: the compile failed (its log, the exception's ``stderr``, says
why), a ``kernel_compile`` as round 13's neuronx-cc exit (:mod:`.backends` ``NEURON_COMPILE``) is, not a hang-up.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature
from ddlab.vllm_crashes.backends import NEURON_COMPILE

__all__ = ["SIGNATURES", "NEURON_CACHE_COMPILE"]

_CACHE_FRAME = r'neuron_cc_wrapper\.py", line \d+, in compile_cache_entry\s*$'
_RAISED = r'raise \(?subprocess\.CalledProcessError\(-1, "", stderr=error_log\)'
_SIGHUP_OF_MINUS_ONE = r"CalledProcessError: Command '' died with <Signals\.SIGHUP: 1>"

NEURON_CACHE_COMPILE = Signature(
    "vllm_neuron_cache_compile", NEURON_COMPILE.kind,
    "the Neuron compile cache's compile failed (its -1 reads as SIGHUP)",
    ("libneuronxla's compile cache raised a failed compile of the model's graph with return code -1, which Python "
     "prints as 'died with <Signals.SIGHUP: 1>': no signal was sent, the Neuron compiler failed. Its log is the "
     "exception's stderr and the compile cache's entry (`/var/tmp/neuron-compile-cache`, or "
     "`NEURON_COMPILE_CACHE_URL`); rerun with `NEURON_CC_FLAGS=\"--verbose=info\"` to see it, clear a failed "
     "entry of the cache, then a Neuron SDK release that supports this model and configuration, or a smaller "
     "bucket / batch / sequence length in the neuron config.",),
    patterns=(_SIGHUP_OF_MINUS_ONE,), types=r"(?:\w+\.)*CalledProcessError", context=(rf"{_CACHE_FRAME}|{_RAISED}",),
    priority=NEURON_COMPILE.priority,
    sources=(("libneuronxla (the log's own frame)", "libneuronxla/neuron_cc_wrapper.py:181 (compile_cache_entry: "
                                                    "raise (subprocess.CalledProcessError(-1, \"\", "
                                                    "stderr=error_log)))"),
             ("CPython 3.11", "Lib/subprocess.py:140-143 (CalledProcessError.__str__: Command '%s' died with %r, "
                              "signal.Signals(-self.returncode))")))

SIGNATURES = [NEURON_CACHE_COMPILE]
