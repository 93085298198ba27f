"""The crash signatures ddlab knows: what a crash's text looks like, and where a process was.

:mod:`.signature` defines :class:`~ddlab.crashes.signature.Signature` (a kind's texts,
their sources in the real releases, its advice) and :class:`~ddlab.crashes.signature.Found`
(what a diagnosis found, handed to the advice); :mod:`.kinds` holds the signatures, data,
one module per family; :mod:`.frames` reads which phase a crash's frames show. Nothing here
reads a whole log or decides a verdict: :mod:`ddlab.diagnosis` does, over these tables.
The layer sits below diagnosis and imports nothing of ddlab.
"""
