"""A library's notice that it skipped its own C++ extension: a warning, never the crash (round 90).

torchao loads its compiled ops at import inside a ``try`` and, on any exception, logs "Skipping import of cpp
extensions: <the exception>" at DEBUG and goes on without them (torchao 0.10.0 torchao/__init__.py:38-39; 0.9.0
:43-44 logs the words alone): the import succeeds, and a server that never calls those ops runs on. The
exception it names is often the dynamic linker's "undefined symbol" (a torchao build for another torch), which
on a line of its own reads as :mod:`.packages`' ``dependency_mismatch``. On this notice it is a warning
(``explains``): it never decides the kind over the exception that killed the process (a CUDA OOM while the
model is built), and explains only a traceback the same process cuts or leaves unexplained right after it.
:mod:`.packages` splices this list after its own.
"""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["SIGNATURES", "SKIPPED_EXTENSION"]

SKIPPED_EXTENSION = Signature(
    "skipped_cpp_extension", "dependency_mismatch", "a library skipped its C++ extension (a warning)",
    ("A library (torchao) could not load its compiled extension and goes on without it: its build does not "
     "match the installed torch (an 'undefined symbol' names the missing function). The server runs on unless "
     "it calls those ops; if it died right after, install the torchao build for the installed torch (`pip "
     "show torch torchao`), or uninstall torchao where the server does not use it.",),
    lines=(r"\bSkipping import of cpp extensions\b",), priority=30, phase="launch", explains=True,
    sources=(("torchao 0.10.0", "torchao/__init__.py:38-39 (logging.debug(f\"Skipping import of cpp "
                                "extensions: {e}\"))"),
             ("torchao 0.9.0", "torchao/__init__.py:43-44 (the words alone)")))

SIGNATURES = [SKIPPED_EXTENSION]
