"""vLLM held-out round 115 (8 logs, w11501-w11508), folded into work after its misses were read.

Measured once on main at a2de86c2 (staged as c6b6eb2e): crashed 8/8, kind 7/8, phase 7/8. Two logs missed, both
ddlab's, read against the source of vLLM 0.20.0, 0.22.0 and 0.34.0:

- w11504 (kind, fixed): a vLLM nightly (0.22.1rc1.dev26) under docker compose with VLLM_USE_RUST_FRONTEND=1 (off by
  default: vllm/envs.py:140, :551 (0.22.0)): `vllm serve` hands the API side to the vllm-rs binary with the
  non-default arguments as JSON ("Launching Rust frontend: ... --args-json {...}", v1/utils.py:366), and the binary
  refuses --api-key as an argument it does not implement ("The following arguments are not implemented in Rust
  frontend yet:" / "- api_key" / "Remove these arguments to continue.", the strings of 0.22.0's vllm/vllm-rs,
  src/cmd/src/cli/unsupported.rs) and exits 2; the engine comes up, and only then the launcher's wait raises "Process
  RustFrontend (PID: 353) died with exit code 2" (v1/utils.py:533). An argument the frontend refuses:
  bad_argument as labelled, at ready as labelled (vllm_crashes/entrypoints.py ``RUST_FRONTEND_REFUSED``, read on the
  header line only; the advice names the refused flags, read from its "- name" lines by diagnosis/vllm_facts.py,
  and VLLM_USE_RUST_FRONTEND; the frontend's "currently has no effect in Rust frontend, ignoring" warning, or the
  launcher's exit line alone, are not read).
- w11505 (phase, fixed): vLLM 0.20.0 in Docker Desktop on WSL2, each line copied after the view's local time with
  milliseconds and a bar ("2026-05-01 18:30:34.153 | "), which no rule peeled, so no traceback was read and the
  phase stopped at the last milestone the prefixed lines still showed. The time is now peeled as SGLang round 60's barer
  form is (diagnosis/viewer_prefixes.py ``peel_desktop_time``), only where it stands before most lines and before a
  traceback's line or vLLM's own record (vllm/logger.py:22-26, utils/system_utils.py:209 (0.20.0)): the engine
  core's traceback runs compile_or_warm_up_model -> kernel_warmup -> flashinfer_autotune, which
  compile_or_warm_up_model runs after the KV cache is allocated and right before capture_model (v1/worker/
  gpu_worker.py:586-590 (0.20.0)), read at graph_capture as the corpus reads kernel_warmup (round 85,
  diagnosis/vllm_frames.py): graph_capture as labelled; the kind stays unknown as labelled ("CUDA driver error:
  device not ready" from torch.rand, no rule).
- w11501-w11503, w11506-w11508 (read as labelled): a KV-sized start refused for free memory (cuda_oom) and five
  healthy runs.

The positive tests below failed at a2de86c2 (before the fixes). Only this round's logs are read.
"""

from __future__ import annotations

import pytest

from ddlab.diagnosis.diagnosis import diagnose
from ddlab.diagnosis.logtext import split_lines
from fieldkit import (VLLM_MANIFEST, VLLM_WHEELS, assert_in_wheel, assert_vllm_logs_read_as_labelled, disputed,
                      folded_round, read_log, reads, said, vllm_signature)

_ROUND = [f"w115{n:02d}" for n in range(1, 9)]
_TAG = "qwen36-35b-nvfp4-nightly  | "
_REFUSED = ("error: invalid value '{\"api_key\": [\"k\"], \"model\": \"m\"}' for '--args-json <JSON>': \n"
            "The following arguments are not implemented in Rust frontend yet:\n"
            "- api_key\n"
            "- ssl_keyfile\n"
            "\n"
            "Remove these arguments to continue.\n"
            "\n"
            "For more information, try '--help'.\n")
_DIED = ("ERROR 06-01 21:42:59 [utils.py:550] Exception occurred while running API servers: Process RustFrontend "
         "(PID: 353) died with exit code 2\n"
         "Traceback (most recent call last):\n"
         '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/utils.py", line 537, in '
         "wait_for_completion_or_failure\n"
         "    raise RuntimeError(\n"
         "RuntimeError: Process RustFrontend (PID: 353) died with exit code 2\n")
_LAUNCH = ("INFO 06-01 21:35:33 [utils.py:278] non-default args: {'model_tag': 'm', 'api_key': ['k']}\n"
           "INFO 06-01 21:35:56 [utils.py:370] Launching Rust frontend: /usr/lib/vllm/vllm-rs frontend --listen-fd 15 "
           "--engine-count 1 --args-json {\"api_key\": [\"k\"]}\n")


def test_the_round_is_folded_with_its_eight_logs():
    assert folded_round(VLLM_MANIFEST, 115) == _ROUND


def test_none_is_disputed():
    assert disputed(VLLM_MANIFEST, _ROUND) == []


def test_each_log_reads_as_labelled():
    assert assert_vllm_logs_read_as_labelled(_ROUND) == {}


# --- w11504: the Rust frontend refusing an argument it does not implement ------------------------------------------

def test_the_rust_frontends_refusal_is_a_bad_argument():
    assert said(read_log("w11504.log")) == (True, "bad_argument", "vllm_rust_frontend_refused")
    assert reads(read_log("w11504.log")) == (True, "bad_argument", "ready")


def test_the_advice_names_the_refused_flags_and_the_switch():
    text = "".join(_TAG + line for line in (_LAUNCH + _REFUSED + _DIED).splitlines(keepends=True))
    found = diagnose(text, family="vllm")
    assert found.signature == "vllm_rust_frontend_refused"
    assert "`--api-key`, `--ssl-keyfile`" in found.suggestion
    assert "VLLM_USE_RUST_FRONTEND" in found.suggestion


def test_the_cause_names_the_refused_arguments_listed_under_the_header():
    assert diagnose(read_log("w11504.log")).cause == (
        "The following arguments are not implemented in Rust frontend yet: api_key")
    text = "".join(_TAG + line for line in (_LAUNCH + _REFUSED + _DIED).splitlines(keepends=True))
    assert diagnose(text, family="vllm").cause.endswith("yet: api_key, ssl_keyfile")


def test_a_colon_line_with_no_list_under_it_keeps_its_words():
    header = "The following arguments are not implemented in Rust frontend yet:\n"
    assert diagnose(_LAUNCH + header + "\nRemove these arguments to continue.\n", family="vllm").cause == header.strip()


def test_the_refusal_alone_reads_the_same():
    assert vllm_signature(_REFUSED) == "vllm_rust_frontend_refused"


def test_an_argument_the_frontend_only_ignores_is_not_this():
    ignored = ("(RustFrontend pid=353) WARNING 06-01 21:35:56 [unsupported.rs:64] argument 'enable_auto_tool_choice' "
               "currently has no effect in Rust frontend, ignoring\n")
    assert vllm_signature(_LAUNCH + ignored) != "vllm_rust_frontend_refused"
    assert said(_LAUNCH + ignored)[0] is False


def test_the_launchers_exit_line_alone_is_not_this():
    assert vllm_signature(_LAUNCH + _DIED) != "vllm_rust_frontend_refused"
    assert said(_LAUNCH + _DIED)[:2] == (True, "unknown")


def test_the_header_quoted_inside_another_line_is_not_this():
    quoted = ("INFO 06-01 21:35:56 [utils.py:370] see: The following arguments are not implemented in Rust frontend "
              "yet: - api_key\n")
    assert vllm_signature(_LAUNCH + quoted) != "vllm_rust_frontend_refused"


# --- w11505: Docker Desktop's time with milliseconds and a bar before each line ---------------------------------------

def test_the_kernel_warmup_behind_the_desktop_time_is_at_graph_capture():
    assert said(read_log("w11505.log")) == (True, "unknown", None)
    assert reads(read_log("w11505.log")) == (True, "unknown", "graph_capture")


_WARMUP = ['(EngineCore pid=255) INFO 05-01 16:30:23 [kv_cache_utils.py:1711] GPU KV cache size: 49,600 tokens',
           '(EngineCore pid=255) ERROR 05-01 16:30:34 [core.py:1136] Traceback (most recent call last):',
           '(EngineCore pid=255) ERROR 05-01 16:30:34 [core.py:1136]   File "/usr/local/lib/python3.12/dist-packages/'
           'vllm/v1/worker/gpu_worker.py", line 586, in compile_or_warm_up_model',
           '(EngineCore pid=255) ERROR 05-01 16:30:34 [core.py:1136]     kernel_warmup(self)',
           '(EngineCore pid=255) ERROR 05-01 16:30:34 [core.py:1136]   File "/usr/local/lib/python3.12/dist-packages/'
           'vllm/model_executor/warmup/kernel_warmup.py", line 46, in kernel_warmup',
           '(EngineCore pid=255) ERROR 05-01 16:30:34 [core.py:1136]     flashinfer_autotune(worker.model_runner)',
           '(EngineCore pid=255) ERROR 05-01 16:30:34 [core.py:1136] RuntimeError: CUDA driver error: device not ready',
           "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core "
           "proc(s): {}"]


def test_vllm_lines_behind_the_desktop_time_are_read():
    text = "".join(f"2026-05-01 18:30:{i:02d}.153 | {line}\n" for i, line in enumerate(_WARMUP))
    assert reads(text) == (True, "unknown", "graph_capture")
    assert "CUDA driver error: device not ready" in diagnose(text).cause


def test_a_loggers_own_time_and_bar_are_kept():
    # a program's logger writing "<time> | LEVEL | where - message" (its records, no vLLM line behind the time)
    text = ("2025-06-23 12:08:26.497 | INFO     | __main__:main:287 - starting the server\n"
            "2025-06-23 12:08:27.001 | WARNING  | __main__:main:290 - vLLM server is not running\n"
            "2025-06-23 12:08:28.120 | ERROR    | __main__:cli_evaluate:357 - Error during evaluation\n")
    assert [ln.msg for ln in split_lines(text)][0].startswith("2025-06-23 12:08:26.497 | INFO")


def test_a_time_before_a_few_lines_only_is_kept():
    text = ("2026-05-01 18:30:34.153 | (EngineCore pid=255) INFO 05-01 16:30:34 [core.py:1] one\n"
            + "".join(f"plain line {n}\n" for n in range(5)))
    assert split_lines(text)[0].msg.startswith("2026-05-01 18:30:34.153 | ")


# --- the lines the rules cite -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("release", "path", "text"), [
    ("0.22.0", "vllm/envs.py", '    use_rust = bool(int(os.environ.get("VLLM_USE_RUST_FRONTEND", "0")))'),
    ("0.22.0", "vllm/envs.py", "    VLLM_USE_RUST_FRONTEND: bool = False"),
    ("0.22.0", "vllm/v1/utils.py", '        logger.info("Launching Rust frontend: %s", " ".join(cmd))'),
    ("0.22.0", "vllm/v1/utils.py", 'f"died with exit code {proc.exitcode}"'),
    ("0.34.0", "vllm/envs.py", "    VLLM_USE_RUST_FRONTEND: bool = False"),
    ("0.20.0", "vllm/v1/worker/gpu_worker.py",
     "        kernel_warmup(self)\n\n        cuda_graph_memory_bytes = 0\n"
     "        if not self.model_config.enforce_eager:\n"
     "            cuda_graph_memory_bytes = self.model_runner.capture_model()\n"),
    ("0.20.0", "vllm/logger.py", '    f"{envs.VLLM_LOGGING_PREFIX}%(levelname)s %(asctime)s "'),
    ("0.20.0", "vllm/utils/system_utils.py", 'prefix = f"({worker_name} pid={pid}) "'),
], ids=lambda v: v if isinstance(v, str) and len(v) < 40 else None)
def test_the_cited_lines_are_vllms_own(release, path, text):
    assert_in_wheel(release, path, text)


@pytest.mark.parametrize("release", ["0.22.0", "0.34.0"])
def test_the_refusal_is_the_rust_frontends_own(release):
    binary = VLLM_WHEELS / release / "vllm" / "vllm-rs"
    if not binary.is_file():
        pytest.skip(f"no unpacked wheel at {binary}")
    data = binary.read_bytes()
    assert b"The following arguments are not implemented in Rust frontend yet:" in data
    assert b"Remove these arguments to continue." in data
    assert b"src/cmd/src/cli/unsupported.rs" in data
