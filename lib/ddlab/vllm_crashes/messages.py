"""vLLM: exception texts that round 16 showed in V0's engine records (NIXL's status names, Python's missing
module) and NIXL texts of round 17 (the connector's failure record, NIXL not installed), advice in vLLM's
flags.

V0's multiprocessing engine logs the exception itself as its record's message above the traceback (read by
:mod:`ddlab.diagnosis.vllm_records`), so a paste cut before the exception line still shows its text, often
with no type: these signatures read the text whatever the type.

Cited as :mod:`.vllm` cites: ``(release, "vllm/path.py:line")`` in the wheels, a library's file by name. Part
of :mod:`.vllm`'s list, in its order.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ddlab.vllm_crashes.library import DEPENDENCY
from ddlab.crashes.signature import Found, Signature, regex

__all__ = ["SIGNATURES", "NIXL_STATUS", "NO_MODULE_NAMED", "NIXL_TRANSFER_FAILURE", "NIXL_UNAVAILABLE"]

# (round 16) NIXL's Python bindings raise one exception class per error status, its message the status's name
# (nixl_bindings.cpp throw_nixl_exception, e.g. "throw nixlBackendError(nixlEnumStrings::statusStr(status)...)":
# ai-dynamo/nixl 0.2.0 src/bindings/python/nixl_bindings.cpp:91, :106, the names at src/core/nixl_agent.cpp:50,
# :55; v1.4.0 nixl_bindings.cpp:107, :122, src/core/nixl_enum_strings.cpp:64, :74); its agent is the KV transfer
# of a PD deployment (vLLM's NIXL connector, Dynamo's patched V0 engine). Raised where a frame of the chain is
# NIXL's or calls it (its name or path says nixl), and not in NIXL's use for other transfers (the EPLB
# communicator's, weight transfer) nor for one request's handshake (:data:`.backends.NIXL_HANDSHAKE`)
_NIXL_STATUSES = (r"NOT_POSTED|INVALID_PARAM|BACKEND|NOT_FOUND|MISMATCH|NOT_ALLOWED|REPOST_ACTIVE|UNKNOWN"
                  r"|NOT_SUPPORTED|REMOTE_DISCONNECT|CANCELED|NO_TELEMETRY")
_NIXL_STATUS = rf"^(?:(?:\w+\.)*nixl\w*Error: |Exception: )?NIXL_ERR_(?:{_NIXL_STATUSES})\s*$"


def _nixl_status(found: Found) -> str | None:
    match = regex(rf"NIXL_ERR_(?:{_NIXL_STATUSES})").search(found.text)
    if match and match[0] == "NIXL_ERR_BACKEND":
        return ("NIXL_ERR_BACKEND is its transport backend (UCX by default) failing: `ucx_info -v` and "
                "`ucx_info -d` in the server's environment show the UCX it loads and the devices it sees (the "
                "NIXL and UCX builds must match: a pip-installed NIXL brings its own UCX); UCX_TLS and "
                "UCX_NET_DEVICES choose the transports.")
    return f"NIXL's status: {match[0]}." if match else None


NIXL_STATUS = Signature(
    "vllm_nixl_status_error", "pd_transfer", "NIXL returned an error status (PD KV transfer)",
    ("NIXL, the KV transfer library between the prefill and the decode instances, returned an error: at "
     "startup its agent or backend could not be set up or register the KV cache, while serving a transfer or a "
     "remote agent's metadata failed. NIXL's own lines above it say why (more with NIXL_LOG_LEVEL=DEBUG); check "
     "that both instances run the same NIXL and reach each other over its transport, and the KV transfer "
     "settings (`--kv-transfer-config`).",),
    patterns=(_NIXL_STATUS,), context=(r"^\s+\S.*nixl",),
    absent=(r"eplb|weight_transfer", r"Handshake failed for request"),
    priority=80, detail=_nixl_status,
    sources=(("NIXL (ai-dynamo/nixl) 0.2.0", "src/bindings/python/nixl_bindings.cpp:91, :106 "
                                             "(throw_nixl_exception), :161, :166 (register_exception)"),
             ("NIXL (ai-dynamo/nixl) 0.2.0", "src/core/nixl_agent.cpp:50, :55 (statusStr)"),
             ("NIXL (ai-dynamo/nixl) v1.4.0", "src/bindings/python/nixl_bindings.cpp:107, :122"),
             ("NIXL (ai-dynamo/nixl) v1.4.0", "src/core/nixl_enum_strings.cpp:64, :74")))

# (round 16) CPython's message for an import that finds no module ("No module named 'X'": Lib/importlib/
# _bootstrap.py:1117-1118, _ERR_MSG, raised as ModuleNotFoundError at :1140 (3.11.7)): the installed packages
# lack a module the code imports (a library of another release, a plugin not installed), whatever type the
# paste shows for it (V0's engine logs only its str)
_NO_MODULE = r"^(?:(?:\w+\.)*\w+: )?No module named '([\w.]+)'\s*$"


def _no_module(found: Found) -> str | None:
    match = regex(_NO_MODULE, re.I | re.M).search(found.text)
    if not match:
        return None
    top = match[1].split(".")[0]
    if top == match[1]:
        return f"Nothing named {top} is installed where vLLM runs: install it (`pip show {top}` must find it)."
    return (f"{top} is installed without {match[1]}: the installed {top} is another release than the code "
            f"that imports it expects (`pip show {top}`; for a connector's library, the release vLLM's docs pin).")


NO_MODULE_NAMED = replace(
    DEPENDENCY, name="vllm_no_module_named", title="a module could not be imported (No module named ...)",
    patterns=(_NO_MODULE,), lines=(), types=None, context=(), absent=(), priority=45, phase=None,
    detail=_no_module,
    sources=(("CPython 3.11.7", "Lib/importlib/_bootstrap.py:1117 (_ERR_MSG_PREFIX 'No module named ')"),
             ("CPython 3.11.7", "Lib/importlib/_bootstrap.py:1140 (raise ModuleNotFoundError(_ERR_MSG...))")))

# (round 17) the NIXL connector's structured failure record, "NIXL transfer failure: %s | Context: %s"
# (_log_failure, kv_connector/v1/nixl/base_worker.py:1118 (0.30.0), :1378 (0.33.0), :1455 (0.34.0)): every
# caller catches the error and logs it so, then goes on: a handshake with a remote engine that failed (the
# handshake future's done_callback, "handshake_setup_failed", :1513 (0.34.0); the requests waiting on it,
# "handshake_failed", :1549), a transfer's failed state or exception (:3499, :3509), a notification (:3577;
# pull_worker.py:479, :540, :637; push_worker.py:390, :422, :512, :755): the requests it names fail or are
# recomputed and the engine serves on. One request's error (or one remote engine's); the exception logged
# with it (exc_info) is part of the record (a NIXL status raised in it and shown whole still reads as
# vllm_nixl_status_error: the record's line is not part of the traceback's chain). Where the paste cuts the
# record's line off, its traceback is the handshake callback's by its frame: every release catches there
# (done_callback: nixl_connector.py:1096-1099 (0.11.1), logger.exception("Handshake with %s failed");
# base_worker.py:1172-1183 (0.30.0), :1499-1518 (0.34.0), _log_failure)
_NIXL_FAILURE = r"NIXL transfer failure: \w+(?:\. .*)? \| Context: \{"
_NIXL_CALLBACK = r'nixl(?:_connector|/\w*worker)\.py", line \d+, in done_callback\s*$'
NIXL_TRANSFER_FAILURE = Signature(
    "vllm_nixl_transfer_failure", "request_error", "NIXL's KV transfer failed for a request (PD, logged)",
    ("The decode instance's NIXL connector logged a failed KV transfer step and carried on: the requests it "
     "names fail (or are recomputed, with `kv_load_failure_policy`), the engine serves on. Its failure_type "
     "says which step: handshake_setup_failed / handshake_failed, the decode side could not reach the "
     "prefill instance's NIXL side channel (its host and port in the request's kv_transfer_params, "
     "VLLM_NIXL_SIDE_CHANNEL_PORT) or its agent metadata did not match; transfer_failed / "
     "transfer_exception, the transfer itself (NIXL's status in the exception). The exception logged with "
     "it says why.",),
    patterns=(r".",), context=(rf"{_NIXL_FAILURE}|{_NIXL_CALLBACK}",), lines=(_NIXL_FAILURE,), cut_ok=True,
    priority=4, request=True, phase="serving",
    sources=(("0.30.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:1118"),
             ("0.30.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:1176"),
             ("0.33.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:1378"),
             ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:1455"),
             ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:1513"),
             ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:3509"),
             ("vllm 0.11.1", "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py:1099")))

# (round 17) NIXL's connector built where NIXL cannot be imported: the import's failure leaves the wrapper
# None with a warning only ("NIXL is not available", nixl_connector.py:75 (0.11.1), distributed/
# nixl_utils.py:63 (0.34.0)); the connector's worker then refuses to start, RuntimeError("NIXL is not
# available") (nixl_connector.py:792 (0.11.1); nixl/base_worker.py:404 (0.30.0), :611 (0.33.0), :670
# (0.34.0)): the package the `--kv-transfer-config` needs is not installed. Only the raised error: the
# warning alone is every server's that does not use NIXL
NIXL_UNAVAILABLE = replace(
    DEPENDENCY, name="vllm_nixl_unavailable", title="NIXL is not installed (NixlConnector)",
    advice=("vLLM's NixlConnector was configured (`--kv-transfer-config`) but NIXL cannot be imported where "
            "vLLM runs: install NIXL (`pip install nixl`, or the build for this CUDA / ROCm) in the server's "
            "environment; `python -c 'import nixl._api'` shows the import's own error. The AttributeError of "
            "the connector's shutdown after it is a follow-on.",),
    # (the exception's text may run on with the paste's next lines: the line itself ends at its message)
    patterns=(r"^(?:RuntimeError: )?NIXL is not available\s*(?:$|\n)",), types=r"(?:\w+\.)*RuntimeError|",
    lines=(r"^RuntimeError: NIXL is not available\s*$",), context=(), absent=(), priority=60, phase=None,
    detail=None,
    sources=(("vllm 0.11.1", "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py:792"),
             ("0.30.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:404"),
             ("0.33.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:611"),
             ("0.34.0", "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py:670"),
             ("0.34.0", "vllm/distributed/nixl_utils.py:63")))

SIGNATURES: list[Signature] = [NIXL_STATUS, NO_MODULE_NAMED, NIXL_TRANSFER_FAILURE, NIXL_UNAVAILABLE]
