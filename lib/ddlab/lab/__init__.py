"""The experiment on one host: deploy a variant, watch it, drive and measure it.

:mod:`.plans` validates, :mod:`.deploy` holds a host and always puts its
baseline back, :mod:`.watch` follows a variant to its verdict
(:mod:`.verdict`), :mod:`.verify_requests` drives the verify path with HTTP
requests, :mod:`.lossless` holds its greedy tokens against the model's own, and
:mod:`.measure` benchmarks a ready server (:mod:`.stats`, :mod:`.hostload`).
Many variants (a grid, a pool, a search) are :mod:`ddlab.sweeps`' job, a floor up.
"""
