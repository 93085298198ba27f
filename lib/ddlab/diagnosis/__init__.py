"""Reading a server's log: did it crash, of what, in which phase, and what to try next.

:func:`ddlab.diagnosis.diagnosis.diagnose` reads the lines (:mod:`.logtext`)
and the exception chains (:mod:`.tracebacks`) and matches them against the
crash signatures (:mod:`.signatures`, data). Pure functions of text: nothing
here touches a host.
"""
