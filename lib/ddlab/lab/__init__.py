"""The experiments: deploy a variant on a host, watch it, probe and measure it, sweep a grid.

:mod:`.plans` validates, :mod:`.deploy` holds a host and always puts its
baseline back, :mod:`.watch` follows a variant to its verdict, :mod:`.probes`
drives the verify path, :mod:`.measure` benchmarks a ready server, and
:mod:`.sweep_plan` / :mod:`.sweep_run` run grids of cells into the results
:mod:`.store`, read back as frames by :mod:`.results`.
"""
