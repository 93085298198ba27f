"""A disk, or the user's quota on it, filling up (``disk_full``): a write the kernel refused for want of space.

The kernel refuses a write with ENOSPC (28, "No space left on device") when the file system is full and with EDQUOT
(122, "Disk quota exceeded") when the user's quota on it is spent (linux-libc-dev 6.1.187
/usr/include/asm-generic/errno-base.h:32, errno.h:105); the runtimes print the errno's string their own way:
Python's OSError as "[Errno 28] No space left on device: 'PATH'" (CPython Objects/exceptions.c, OSError_str: "[Errno
%S] %S: %R"), Rust's io::Error as "No space left on device (os error 28)" (rust-lang/rust
library/std/src/io/error.rs, its Display: "{detail} (os error {code})"), which hf_xet, the Hugging Face hub's
downloader, raises into Python inside its own words ("RuntimeError: Task error: File reconstruction error: IO Error:
Disk quota exceeded (os error 122)", vLLM round 119's w11903, a model download into the hub's cache). Whatever file
it was (a download, a kernel cache, a checkpoint, a log), the server cannot go on writing it: no kind of memory, no
argument, no missing model.

Not this: the same errno on /dev/shm (tmpfs is memory: :data:`~.memory.HOST_OOM` reads it, and a SIGBUS beside a
warning that says it :func:`ddlab.diagnosis.readings.shm_reading`), NCCL's and torch's shared-memory texts ("No
space left on device (28)", memory too); the errno inside a warning (joblib's semaphore probe; the hub's "Not
enough free disk space to download the file", huggingface_hub 0.26.2 file_download.py:653-657, a check before the
download that ends nothing); SGLang's "No space left for only one request" (the KV token slots,
``slots_exhausted``). On a line, only an exception's own line (``Type: ...``) decides.
"""

from __future__ import annotations

from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["DISK_FULL", "SIGNATURES", "disk_detail"]

# the errno's two strings as Python and Rust print them
_TEXTS = (r"\[Errno 28\] No space left on device", r"\[Errno 122\] Disk quota exceeded",
          r"No space left on device \(os error 28\)", r"Disk quota exceeded \(os error 122\)")
# on the exception's own first line (not a warning in its continuation lines: h10032's joblib), not on /dev/shm
_FIRST_LINE = r"\A(?![^\n]*/dev/shm)[^\n]*?"
# a log line: an exception's own line, its type (dotted, an Error or Exception) then a colon, not on /dev/shm
_RAISED = r"^(?:[A-Za-z_][\w.]*(?:Error|Exception)): (?![^\n]*/dev/shm)[^\n]*?"
_DOWNLOAD_RE = regex(r"\b(?:xet_get|hf_hub_download|snapshot_download|_download_to_tmp_and_move|http_get|"
                     r"File reconstruction error)\b")
_PATH_RE = regex(r"(?:No space left on device|Disk quota exceeded): '([^'\n]+)'")


def disk_detail(found: Found) -> str:
    """What filled up, where the evidence says: a quota or the disk, the path the write went to, a download."""
    text = found.chain_text or found.text
    quota = regex(r"Disk quota exceeded").search(text)
    said = ["Your quota on that file system is spent (`quota -s` shows it)." if quota
            else "The file system is full (`df -h` on the folder shows it)."]
    if path := _PATH_RE.search(text):
        said.append(f"The write that failed was to {path[1]}: free space there or point that cache elsewhere.")
    if _DOWNLOAD_RE.search(text):
        said.append("It was the model's download into the Hugging Face cache: set HF_HOME to a folder on a disk "
                    "with room for the weights, or download them first (`hf download REPO --local-dir DIR`) and "
                    "serve that folder.")
    return " ".join(said)


DISK_FULL = Signature(
    "disk_full", "disk_full", "a disk, or the user's quota on it, is full",
    ("A write was refused for want of disk space: free space on that file system, or move what the server writes "
     "there to a larger disk (downloaded weights: HF_HOME; compiled kernels' caches: TRITON_CACHE_DIR, "
     "TORCHINDUCTOR_CACHE_DIR), then start again.", "`--download-dir` puts the weights' download elsewhere."),
    patterns=tuple(_FIRST_LINE + text for text in _TEXTS), lines=tuple(_RAISED + text for text in _TEXTS),
    absent=(r"/dev/shm",), priority=60,
    detail=disk_detail,
    sources=(("linux-libc-dev 6.1.187", "/usr/include/asm-generic/errno-base.h:32 (ENOSPC 28, \"No space left on "
                                        "device\")"),
             ("linux-libc-dev 6.1.187", "/usr/include/asm-generic/errno.h:105 (EDQUOT 122, \"Quota exceeded\"; "
                                        "glibc's strerror: \"Disk quota exceeded\")"),
             ("CPython 3.11", "Objects/exceptions.c (OSError_str: \"[Errno %S] %S: %R\")"),
             ("Rust std", "library/std/src/io/error.rs (impl Display for Error: \"{detail} (os error {code})\")"),
             ("huggingface_hub 0.26.2", "huggingface_hub/file_download.py:653-657 (_check_disk_space: the "
                                        "warning before a download, no crash)")))

SIGNATURES = [DISK_FULL]
