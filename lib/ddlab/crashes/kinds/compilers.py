"""Kernel compilers that abort the process: a C++ assertion inside a JIT compiler (``kernel_compile``).

Triton lowers a kernel through its MLIR passes and the LLVM it links, in the server's own
process, and its release builds keep C++ ``assert`` on: a failed one prints glibc's line
("PROG: FILE:LINE: FUNCTION: Assertion `EXPR' failed.") and calls abort(), so the process
dies with no Python exception. The kernel's build failed: ``kernel_compile``, the
assertion's own text says what the compiler could not lower. :mod:`.device` splices this
list into its own, after the builds that fail with an exception.
"""

from __future__ import annotations

from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES"]

# (round 18) glibc's assertion line, its function (or its file) Triton's, MLIR's or LLVM's: the
# function's signature names their namespaces (mlir::triton::getCvtOrder(mlir::Attribute, ...)), the
# file their source trees (Triton's lib/Analysis, lib/Conversion, lib/Dialect, lib/Target; triton 2.3.1
# triton/_C/libtriton.so holds "/project/lib/Analysis/Allocation.cpp" and the assertion text of
# getCvtOrder, "mma -> mma layout conversion is only supported on Ampere"). A device-side assert of a
# CUDA kernel (".cu:N: ... Assertion") is a kernel's fault, :mod:`.device`, not this
_COMPILER_ASSERT = (r"^(?=.{0,1600}?(?:\b(?:mlir|llvm)::|[/\\]lib[/\\](?:Analysis|Conversion|Dialect|Target)[/\\]))"
                    r"(?:\S+: )?\S+\.(?:cpp|cc|h|hpp|inc):\d+: .{0,800}Assertion `.{1,800}' failed\.\s*$")


def _assert_detail(found: Found) -> str | None:
    said = regex(r"Assertion `.*?\"([^\"]{8,200})\"'? failed").search(found.text)
    where = regex(r"(\w+(?:::\w+)+)\(").search(found.text)
    if said:
        return f"The compiler asserted: \"{said[1]}\"" + (f" (in {where[1]})." if where else ".")
    return f"The compiler asserted in {where[1]}." if where else None


TRITON_COMPILER_ASSERT = Signature(
    "compiler_assert", "kernel_compile", "Triton's compiler aborted on an assertion while building a kernel",
    ("Triton's compiler (its MLIR passes, or the LLVM it links) hit an assertion while building a kernel "
     "and aborted the process: the kernel, as this Triton lowers it, has no form for this GPU (the "
     "assertion's text names what, often a layout an older or newer architecture lacks). Install the "
     "Triton release your torch and SGLang pin, or a newer one whose compiler handles this GPU; clear "
     "~/.triton/cache; pick an `--attention-backend` that avoids the Triton kernel, or drop "
     "`--enable-torch-compile` if the kernel is torch.compile's.",),
    lines=(_COMPILER_ASSERT,), priority=80, fatal=True, detail=_assert_detail,
    sources=(("glibc 2.39 (glibc-2.39)", "assert/assert.c:103 (__assert_fail: \"%s%s%s:%u: %s%sAssertion "
                                         "`%s' failed.\\n%n\", then abort() :94)"),
             ("triton 2.3.1", "triton/_C/libtriton.so (\"/project/lib/Analysis/Allocation.cpp\"; "
                              "\"!(srcMmaLayout && dstMmaLayout && !srcMmaLayout.isAmpere()) && "
                              "\\\"mma -> mma layout conversion is only supported on Ampere\\\"\")")))

SIGNATURES = [TRITON_COMPILER_ASSERT]
