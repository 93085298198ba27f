"""The HTTP stack's optional package missing when SGLang's server module builds its routes (round 98).

FastAPI checks, when a route declares a form field, that python-multipart is importable, and raises
``RuntimeError(multipart_not_installed_error)``: 'Form data requires "python-multipart" to be installed.' (or,
with the unrelated ``multipart`` package in its place, 'It seems you installed "multipart" instead.') (fastapi
0.112.0 fastapi/dependencies/utils.py:67-78, :80-100 ``check_file_field``, from ``get_body_field``, :817).
SGLang 0.2.9's server module declares such a route at import (sglang/srt/server.py:161-162 ``@app.post
("/v1/files")`` with ``Form("batch")``), reached from ``sglang.launch_server``'s first import (launch_server.py:5),
while its ``[srt]`` extra lists fastapi and no python-multipart (METADATA:229-244), which fastapi 0.112.0 no longer
installs by itself: the installed packages do not fit (``dependency_mismatch``), before anything starts
(``launch``). FastAPI's frames make the request reading (:mod:`.requests` ``asgi_exception``) look near; this is no
request. Only FastAPI's sentence."""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["FORM_MULTIPART_MISSING", "SIGNATURES"]

_MISSING = r'Form data requires "python-multipart" to be installed\.'
FORM_MULTIPART_MISSING = Signature(
    "form_multipart_missing", "dependency_mismatch", "FastAPI needs python-multipart for the server's form route",
    ("FastAPI refuses to build SGLang's form route (the file upload of `/v1/files`) without python-multipart, and "
     "the environment has none (fastapi 0.112 and later no longer install it; SGLang's `[srt]` extra of that time "
     "did not list it): `pip install python-multipart` where the server runs (if `pip show multipart` finds the "
     "unrelated `multipart` package, `pip uninstall multipart` first), or an SGLang release that pins it.",),
    types=r"RuntimeError", patterns=(_MISSING,), lines=(rf"^(?:RuntimeError: )?{_MISSING}",), priority=79,
    phase="launch",
    sources=(("fastapi 0.112.0", "fastapi/dependencies/utils.py:67-71 (multipart_not_installed_error), :100 (raise "
                                 "RuntimeError(multipart_not_installed_error) from None)"),
             ("sglang 0.2.9", "sglang/srt/server.py:161-162 (@app.post(\"/v1/files\") ... Form(\"batch\"))"),
             ("sglang 0.2.9", "sglang-0.2.9.dist-info/METADATA:229-244 (the [srt] extra: fastapi, no "
                              "python-multipart)")))

SIGNATURES = [FORM_MULTIPART_MISSING]
