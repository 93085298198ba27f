"""Reading a server's log: did it crash, of what, in which phase, and what to try next.

:func:`ddlab.diagnosis.diagnosis.diagnose` reads the lines (:mod:`.logtext`,
prefixes of any collector removed), the facts the log states (:mod:`.facts`),
the exception chains (:mod:`.tracebacks`) and how the process ended
(:mod:`.exits`); :mod:`.rootcause` picks the error that explains the crash
among the candidates the crash signatures recognise (:mod:`.signatures`, the
registry, over :mod:`ddlab.crashes`: the data by family, each text tied to the
SGLang release and ``path:line`` it comes from), and :mod:`.advice` writes the next
step for the user's release and speculative algorithm. Pure functions of
text: nothing here touches a host. docs/diagnosis.md has the kinds table.
"""
