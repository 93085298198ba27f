"""The bottom layer: what every other layer uses and nothing of theirs.

Errors (:mod:`.errors`), paths (:mod:`.paths`), secret masking
(:mod:`.redact`), run folders (:mod:`.run_folders`), the logger tree
(:mod:`.log`), progress for waits (:mod:`.progress`), interrupts held for a step or
raised in a worker thread (:mod:`.interrupts`), the checks every layer words alike (a
number, a did-you-mean, an env name: :mod:`.checks`) and the version.
"""
