"""papermill, nbformat and nbconvert without a grammar that nothing here uses.

nbformat validates notebooks with jsonschema, whose format checkers import
``rfc3987_syntax`` when it is installed (jupyterlab's jupyter-events asks for
``jsonschema[format-nongpl]``, which brings it). That module builds an Earley
parser for RFC 3987 when it is imported: 0.73 s of CPU (`python -X importtime -c
"import papermill"`, 2026-12-01, 2-core VM; papermill's whole import was 1.3 s) in
every process that reads a notebook, for the ``iri`` and ``iri-reference`` formats
only, which no notebook schema names. :func:`without_iri_grammar`, called before the
first of those imports, marks the module absent, so jsonschema leaves those two
checkers out exactly as it does when the package is not installed
(jsonschema/_format.py: ``with suppress(ImportError): from rfc3987_syntax import ...``).
Once jsonschema has loaded its checkers this does nothing. pyproject.toml now keeps
jsonschema below 4.24, which does not bring the package at all (processes that are not
ddlab's own, such as the papermill command and the Jupyter server, pay 1.3-1.5 CPU-s
without it); this guard stays for environments installed another way.
"""

from __future__ import annotations

import sys

__all__ = ["without_iri_grammar"]


def without_iri_grammar() -> None:
    if "jsonschema._format" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)
