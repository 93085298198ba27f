"""Many cells: grids of variants, pools of hosts and searches, kept in one store.

:mod:`.plan` turns a grid into validated cells and :mod:`.run` deploys, watches
and measures each (one host, or a pool of them: :mod:`.pool`), committing each
to the results :mod:`.store` the moment it ends; :mod:`.results` reads a sweep
back as a frame. A bisect (:mod:`.bisect`) or an envelope (:mod:`.envelope`) is
a sweep whose cells are chosen as it goes (:mod:`.search` the shared words,
:mod:`.search_plan` and :mod:`.search_run` its plan and its trials). Each cell is
one variant on one host: :mod:`ddlab.lab`, the floor below.
"""
