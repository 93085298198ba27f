"""Held-out round 71 (issue 24): sgl-router's start-up panic, uvicorn's invalid request, Triton's OutOfResources.

Round 71 (h71001-h71011; excerpts of issue and pull-request threads) was measured once on main at f4bae87 (with the
round's logs, 614cc20): crashed 10/11, kind 9/11, phase 7/8. docs/diagnosis.md, "Held-out round 71", tells the
round. Two misses were ddlab's:

- h71001, sgl-router's start-up lines, then "thread '<unnamed>' panicked at .../tokio-1.45.1/src/runtime/blocking/
  shutdown.rs:51:21: Cannot drop a runtime in a context where blocking is not allowed.": the router built its
  Router, and a blocking reqwest client with it, inside the async start-up that Router.start runs (sglang issue
  7901's backtrace: router.rs:319, server.rs:37, :343, lib.rs:293; PR 7619 moved it to a thread), so the panic is
  on the thread that starts the router; pyo3 raises it into Python as PanicException, a BaseException, which
  sglang-router 0.1.6 launch_router.py:432's ``except Exception`` lets out of main (:474): the router exits.
  Read as its exit (diagnosis/exits.py ``router_start_panic``): crashed, unknown at launch.
- h71004, "WARNING:  Invalid HTTP request received.": uvicorn's 400 to bytes it could not parse on a connection it
  accepted (uvicorn 0.54.0 protocols/http/h11_impl.py:183, httptools_impl.py:176), a client's request with no
  startup line before it: serving (diagnosis/logtext.py's mid-serving lines), no crash.

h71010's kind was disputed on a second look (labelled kernel_config_unsupported; Triton's OutOfResources is raised
after the kernel compiled, before its first launch, triton 3.4.0 compiler/compiler.py:483, and the corpus's five
other logs of it are kernel_compile). Each positive test here fails on 614cc20.
"""

from __future__ import annotations

import pytest

from fieldkit import (KNOWN_MISSES, REAL_MANIFEST, assert_at_line, assert_reads_as_labelled, disputed, folded_round,
                      real, reads)

_IDS = folded_round(REAL_MANIFEST, 71)


def test_round71_is_folded_into_work_with_h71010s_kind_disputed():
    assert _IDS == [f"h710{n:02d}" for n in range(1, 12)]
    assert disputed(REAL_MANIFEST, _IDS) == ["h71010"]
    assert REAL_MANIFEST["h71010"]["kind_disputed"] == ["kernel_config_unsupported", "kernel_compile"]
    assert [i for i in _IDS if i in KNOWN_MISSES["real"]] == []


@pytest.mark.parametrize("log_id", ["h71001", "h71004"], ids=lambda v: v)
def test_the_rounds_misses_read_as_labelled(log_id):
    assert_reads_as_labelled(log_id, None)


def test_h71010_reads_as_the_corpuss_other_out_of_resources():
    found = real("h71010")
    assert (found.crashed, found.kind, found.signature) == (True, "kernel_compile", "kernel_compile")


# --- h71001: tokio's runtime-drop panic on the thread that starts sgl-router ------------------------------------

_ROUTER_START = (
    "2025-06-25 15:01:45  INFO sglang_router_rs::server: src/server.rs:321: 🚧 Initializing router on 0.0.0.0:30000\n"
    "2025-06-25 15:01:45  INFO sglang_router_rs::server: src/server.rs:334: 🚧 Service discovery disabled\n\n")
_PANIC = ("thread '<unnamed>' panicked at /root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/tokio-1.42.0/"
          "src/runtime/blocking/shutdown.rs:51:21:\n"
          "Cannot drop a runtime in a context where blocking is not allowed. This happens when a runtime is dropped "
          "from within an asynchronous context.\n")


# the same panic in other forms, written from the router's source: the Jan-Mar 2025 logger ("[Router (Rust)]") with
# the one-line panic of a Rust before 1.73; a router binary's 'main'; the PD router's path with RUST_BACKTRACE's
# frames after it (issue 7901's form)
@pytest.mark.parametrize("text", [
    "[Router (Rust)] 2025-03-08 02:33:09 - INFO - 🚧 Initializing router on 0.0.0.0:30000\n"
    "thread '<unnamed>' panicked at 'Cannot drop a runtime in a context where blocking is not allowed. This happens "
    "when a runtime is dropped from within an asynchronous context.', /root/.cargo/registry/src/github.com-1ecc6299db"
    "9ec823/tokio-1.42.0/src/runtime/blocking/shutdown.rs:51:21\n",
    _ROUTER_START + _PANIC.replace("'<unnamed>'", "'main'"),
    _ROUTER_START + _PANIC + "stack backtrace:\n"
    "  25:     0x7fb7396a2659 - sglang_router_rs::router::Router::wait_for_healthy_workers::hee2d9a52d3a5ed31\n"
    "                               at /root/sglang/sgl-router/src/router.rs:319:27\n"
    "  26:     0x7fb7394af227 - sglang_router_rs::pd_router::PDRouter::new::hf603ebd66d3a8a81\n",
], ids=["router-rust-prefix-old-panic", "main-thread", "backtrace"])
def test_tokios_panic_starting_sgl_router_is_its_exit_at_launch(text):
    assert reads(text) == (True, "unknown", "launch")


# near misses: the panic on one of actix's workers (it ends that worker only), another panic of the start thread, the
# panic with none of the router's lines (no sgl-router to say it started), prose quoting it
@pytest.mark.parametrize("text", [
    _ROUTER_START + _PANIC.replace("'<unnamed>'", "'actix-rt|system:0|arbiter:3'"),
    _ROUTER_START + "thread '<unnamed>' panicked at src/router.rs:463:40:\n"
    "called `Result::unwrap()` on an `Err` value: PoisonError { .. }\n",
    _PANIC,
    _ROUTER_START + "the router then says thread '<unnamed>' panicked at tokio-1.45.1/src/runtime/blocking/"
    "shutdown.rs:51:21\n",
], ids=["actix-worker", "another-panic", "no-router-lines", "prose"])
def test_other_panics_are_not_read_as_the_routers_exit(text):
    assert reads(text)[0] is False


# --- h71004: uvicorn's answer to bytes it could not parse -----------------------------------------------------

# the same line in other forms: without uvicorn's level prefix, under SGLang's stamp, repeated as the reporter saw it
@pytest.mark.parametrize("text", [
    "Invalid HTTP request received.\n",
    "[2024-01-20 10:00:00] WARNING:  Invalid HTTP request received.\n",
    "WARNING:  Invalid HTTP request received.\nWARNING:  Invalid HTTP request received.\n",
], ids=["no-level", "stamped", "repeated"])
def test_uvicorns_invalid_request_is_a_client_of_a_serving_server(text):
    assert reads(text) == (False, None, "serving")


# near misses: the line after the server's own start (the startup reads on: uvicorn up is ready), prose naming it
@pytest.mark.parametrize(("text", "phase"), [
    ("INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
     "WARNING:  Invalid HTTP request received.\n", "ready"),
    ("why does it print Invalid HTTP request received. all the time?\n", "launch"),
], ids=["after-uvicorn-start", "prose"])
def test_other_invalid_request_texts_keep_their_phase(text, phase):
    assert reads(text) == (False, None, phase)


# --- the lines the rules and the second look cite -------------------------------------------------------------

@pytest.mark.parametrize(("package", "release", "path", "line", "text"), [
    ("sglang-router", "0.1.6", "sglang_router/launch_router.py", 429, "router.start()"),
    ("sglang-router", "0.1.6", "sglang_router/launch_router.py", 432, "except Exception as e:"),
    ("sglang-router", "0.1.6", "sglang_router/launch_router.py", 474, "launch_router(router_args)"),
    ("uvicorn", "0.54.0", "uvicorn/protocols/http/h11_impl.py", 183, 'msg = "Invalid HTTP request received."'),
    ("uvicorn", "0.54.0", "uvicorn/protocols/http/h11_impl.py", 185, "self.send_400_response(msg)"),
    ("uvicorn", "0.54.0", "uvicorn/protocols/http/httptools_impl.py", 176, 'msg = "Invalid HTTP request received."'),
    ("triton", "3.4.0", "triton/compiler/compiler.py", 483,
     'raise OutOfResources(self.metadata.shared, max_shared, "shared memory")'),
    ("triton", "3.4.0", "triton/compiler/compiler.py", 474, "def _init_handles(self):"),
    ("triton", "3.4.0", "triton/runtime/errors.py", 22, 'return f"out of resource: {self.name}, Required:'),
    ("triton", "3.4.0", "triton/runtime/autotuner.py", 161,
     "except (OutOfResources, CompileTimeAssertionFailure, PTXASError) as e:"),
    ("triton", "3.0.0", "triton/compiler/compiler.py", 374,
     'raise OutOfResources(self.metadata.shared, max_shared, "shared memory")'),
], ids=lambda v: str(v).rsplit("/", 1)[-1] if isinstance(v, str) else str(v))
def test_each_line_the_round_cites_is_the_releases(package, release, path, line, text):
    assert_at_line(package, release, path, line, text)
