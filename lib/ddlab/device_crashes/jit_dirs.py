"""A kernel library's JIT workspace its install does not let this process write (``dependency_mismatch``, round
98).

aiter (AMD's kernel library, which SGLang's ROCm images import from their quantization and MoE layers: the
v0.4.3.post2-rocm630 image's checkout, newer than the PyPI wheel, imports it from fp8.py:55, the log's frame) copied
composable_kernel's sources into a build directory inside its own package at import: ``bd_dir =
f"{this_dir}/build"``, ``shutil.copytree(CK_DIR, f'{bd_dir}/ck', dirs_exist_ok=True)`` (ROCm/aiter 5f6518ac16
aiter/jit/core.py:51-53). A process whose user cannot write the package's tree (an image built as root, a job run as
another user) fails the import with ``shutil.Error`` listing "[Errno 13] Permission denied" for each file. aiter
from d9c05a5727 (2025-03-08, "modify_jit_workspace") writes to ``$AITER_JIT_DIR`` or, where its own directory is not
writable, ``~/.aiter`` (e4048607a5 aiter/jit/core.py:491-507): the installed aiter predates that, so the image's
packages do not fit the way it is run. Only the refusal inside aiter's ``jit/build``; :mod:`.device` splices this
list in."""

from __future__ import annotations

from ddlab.crashes.signature import Signature

__all__ = ["AITER_JIT_DIR_DENIED", "SIGNATURES"]

_DENIED = r"\[Errno 13\] Permission denied: '[^'\n]*[/\\]aiter[/\\]jit[/\\]build[/\\]"
AITER_JIT_DIR_DENIED = Signature(
    "aiter_jit_dir_denied", "dependency_mismatch", "aiter cannot write its JIT build directory at import",
    ("The installed aiter copies its kernel sources into a build directory inside its own package when it is "
     "imported, and this process's user may not write there (an image built as root, run as another user). "
     "aiter releases from March 2025 on fall back to `~/.aiter` or `$AITER_JIT_DIR`: use an image with a newer "
     "aiter, or run the server as the user that owns the image's aiter checkout (`ls -ld <aiter>/aiter/jit`), or "
     "make that directory writable for this user (`chown -R`).",),
    types=r"(?:shutil\.)?Error|PermissionError", patterns=(_DENIED,), priority=79,
    sources=(("aiter (ROCm/aiter 5f6518ac16)", "aiter/jit/core.py:51-53 (bd_dir = f\"{this_dir}/build\"; "
                                               "shutil.copytree(CK_DIR, f'{bd_dir}/ck', dirs_exist_ok=True))"),
             ("aiter (ROCm/aiter e4048607a5)", "aiter/jit/core.py:491-507 (get_user_jit_dir: AITER_JIT_DIR, "
                                               "~/.aiter)")))

SIGNATURES = [AITER_JIT_DIR_DENIED]
