"""What a person reads: figures, verdicts, HTML reports, and notebooks run headless.

:mod:`.plots` draws a sweep's frame, :mod:`.verdicts` states a sweep's answer
first, :mod:`.html` renders executed notebooks and the runs index, and
:mod:`.notebooks` is ``ddlab run``.
"""
