"""ddlab.diagnose: crash diagnosis of SGLang server logs, and `ddlab diagnose`.

Fixtures live in tests/fixtures/logs/ (written the way SGLang and journalctl
write them; suffix says the form: .journal = short, .journal-iso = short-iso,
.journal-iso-precise, .journal-precise, .cat = -o cat, .plain = the process's
own output). tests/fixtures/logs/heldout/ holds logs written separately from
the signature regexes, to check that the recognisers generalise.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ddlab import cli
from ddlab.core.errors import ConfigError
from ddlab.diagnosis import diagnosis as dg
from ddlab.diagnosis.logtext import split_lines
from ddlab.diagnosis.signatures import KINDS, SIGNATURES
from ddlab.diagnosis.tracebacks import find_chains

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"

# file, crashed, kind, phase, signature
CASES = [
    ("kv_pool_oom.journal.log", True, "kv_pool_oom", "memory_pool", "kv_pool_oom"),
    ("kv_pool_oom_old.plain.log", True, "kv_pool_oom", "memory_pool", "kv_pool_oom"),
    ("cuda_oom_load.journal-iso.log", True, "cuda_oom", "load_weights", "cuda_oom"),
    ("capture_failed.journal-iso-precise.log", True, "cuda_graph_capture", "graph_capture", "capture_failed"),
    ("capture_failed_oom.cat.log", True, "cuda_graph_capture", "graph_capture", "capture_failed"),
    ("capture_error.cat.log", True, "cuda_graph_capture", "graph_capture", "capture_error"),
    ("two_ranks.journal-iso.log", True, "cuda_graph_capture", "graph_capture", "capture_failed"),
    ("replay_none.journal.log", True, "cuda_graph_replay", "serving", "replay_none"),
    ("replay_none_warmup.cat.log", True, "cuda_graph_replay", "ready", "replay_none"),
    ("replay_size.journal-iso.log", True, "cuda_graph_replay", "serving", "replay_size"),
    ("replay_cuda_error.plain.log", True, "cuda_illegal_access", "serving", "replay_cuda_error"),
    ("argparse.journal.log", True, "bad_argument", "launch", "argparse"),
    ("unknown_algorithm.journal-iso.log", True, "bad_argument", "launch", "unknown_algorithm"),
    ("unknown_algorithm_choice.cat.log", True, "bad_argument", "launch", "unknown_algorithm"),
    ("missing_option.journal-precise.log", True, "bad_argument", "launch", "missing_option"),
    ("server_args_error.plain.log", True, "bad_argument", "launch", "server_args_error"),
    ("flag_value_error.journal.log", True, "bad_argument", "graph_capture", "flag_value_error"),
    ("context_length_over_model.plain.log", True, "bad_argument", "memory_pool",
     "context_length_over_model"),
    ("port_in_use_bind.plain.log", True, "port_in_use", "ready", "port_in_use"),
    ("port_in_use_wait.journal-iso.log", True, "port_in_use", "launch", "port_in_use"),
    ("model_not_found.journal.log", True, "model_not_found", "launch", "model_not_found"),
    ("nccl.journal-iso.log", True, "nccl", "launch", "nccl"),
    ("health_check.cat.log", True, "health_check", "serving", "health_check"),
    ("weights_unreadable.journal.log", True, "weights_unreadable", "load_weights", "weight_name_unknown"),
    ("oom_killed.journal.log", True, "host_oom", "load_weights", "host_oom"),
    ("healthy.journal.log", False, None, "serving", None),
    # a malformed request body the server survived: one request's error, no crash (issue 24)
    ("healthy_mamba.plain-crlf.log", False, "request_error", "serving", "asgi_exception"),
    ("stopped.journal.log", False, None, "serving", None),
    ("startup_cut.plain.log", False, None, "graph_capture", None),
]


def _diagnose_file(name: str, **kw) -> dg.Diagnosis:
    return dg.diagnose((LOGS / name).read_bytes().decode("utf-8"), **kw)


@pytest.mark.parametrize("name, crashed, kind, phase, signature", CASES, ids=[c[0] for c in CASES])
def test_fixture_diagnosis(name, crashed, kind, phase, signature):
    result = _diagnose_file(name)
    got = (result.crashed, result.kind, result.phase, result.signature)
    assert got == (crashed, kind, phase, signature), result.render()
    said = crashed or kind == "request_error"  # a request's error is said, with its next step
    assert (result.cause is None) == (not said)
    assert (result.suggestion is None) == (not said)


def _indexed(folder: str) -> list[dict]:
    return list(json.loads((LOGS / folder / "index.json").read_text()).values())


def _real_classes() -> list[dict]:
    """The work-split real logs that stand for issue 24's classes, with their labelled kind."""
    manifest = {log["id"]: log for log in json.loads((LOGS / "real" / "manifest.json").read_text())["logs"]}
    classes = json.loads((LOGS / "real" / "classes.json").read_text())["logs"]
    return [{"signature": case["signature"], "kind": manifest[i]["kind"]} for i, case in classes.items()]


def test_every_signature_and_kind_has_a_fixture():
    """CASES here, tests/fixtures/logs/sglang/ (from SGLang's real texts),
    tests/fixtures/logs/pastes/ (pasted logs) and the real logs of issue 24's classes
    (tests/fixtures/logs/real/classes.json) together show every one."""
    entries = ([{"signature": c[4], "kind": c[2]} for c in CASES] + _indexed("sglang") + _indexed("pastes")
               + _real_classes())
    shown = {e.get("signature") for e in entries}
    missing = [s.name for s in SIGNATURES if s.name not in shown]
    assert not missing, f"signatures without a fixture: {missing}"
    assert set(KINDS) <= {e.get("kind") for e in entries}


# --- the "Must show" list, through the CLI --------------------------------------

MUST_SHOW = [
    ("kv_pool_oom.journal.log", "kv_pool_oom"),
    ("capture_failed.journal-iso-precise.log", "cuda_graph_capture"),
    ("replay_none.journal.log", "cuda_graph_replay"),
    ("replay_size.journal-iso.log", "cuda_graph_replay"),
    ("cuda_oom_load.journal-iso.log", "cuda_oom"),
    ("argparse.journal.log", "bad_argument"),
    ("unknown_algorithm.journal-iso.log", "bad_argument"),
    ("port_in_use_bind.plain.log", "port_in_use"),
    ("healthy.journal.log", None),
]


@pytest.mark.parametrize("name, kind", MUST_SHOW, ids=[m[0] for m in MUST_SHOW])
def test_cli_json_must_show(name, kind, capsys):
    assert cli.main(["diagnose", str(LOGS / name), "--json"]) == (3 if kind else 0), \
        "3 on a crash, as ddlab watch"
    out = capsys.readouterr().out
    data = json.loads(out)
    assert {"crashed", "kind", "phase", "cause", "evidence", "suggestion"} <= set(data)
    assert data["kind"] == kind and data["crashed"] is (kind is not None)
    if kind is None:
        assert data["decode"]["accept_len_mean"] == pytest.approx(6.37)


def test_cli_renders_text_and_reads_stdin():
    text = (LOGS / "kv_pool_oom.journal.log").read_bytes()
    done = subprocess.run([sys.executable, "-m", "ddlab.cli", "diagnose", "-"], input=text,
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 3, done.stderr
    assert done.stdout.decode().startswith("CRASHED: kv_pool_oom")


@pytest.mark.slow  # make check reads bounded logs in tests/core/test_bounded.py
@pytest.mark.parametrize("source", ["file", "stdin"])
def test_cli_reads_a_journal_of_days_as_its_start_and_its_end(tmp_path, source):
    """A server that served for days leaves a journal of hundreds of MB: ``ddlab diagnose`` reads
    its first 512 KB and last 2 MB, as the watch reads a host's log (ddlab.core.bounded), says what
    it left out, and gives the verdict the short log gives (before: the whole text, 114 s of CPU
    for a 48 MB journal, 2026-12-05). Here: replay_none's start, its decode lines again for 3 MB
    of serving, then its crash; a file, or the same bytes on stdin."""
    lines = (LOGS / "replay_none.journal.log").read_bytes().splitlines(keepends=True)
    serving = b"".join(lines[39:41])
    big = b"".join(lines[:41]) + serving * (3 * 2**20 // len(serving)) + b"".join(lines[41:])
    path = tmp_path / "journal.log"
    path.write_bytes(big)
    ddlab = str(Path(sys.executable).with_name("ddlab"))  # the installed command, as a user runs it
    short = subprocess.run([ddlab, "diagnose", str(LOGS / "replay_none.journal.log")],
                           capture_output=True, text=True, timeout=60, check=False)
    assert short.returncode == 3 and short.stdout.startswith("CRASHED: cuda_graph_replay"), short.stdout
    argv, stdin = ([str(path)], None) if source == "file" else (["-"], big)
    done = subprocess.run([ddlab, "diagnose", *argv], input=stdin, capture_output=True, timeout=60, check=False)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 3, err
    assert out.splitlines()[:2] == short.stdout.splitlines()[:2], out  # verdict and phase
    assert "read its first 512 KB and last 2 MB" in err and "MB between them left out" in err, err


@pytest.mark.parametrize("argv, message", [
    (["diagnose", "/no/such/file.log"], "no such file"),
    (["diagnose", str(LOGS), "--json"], "is a directory"),
    (["diagnose", str(LOGS / "healthy.journal.log"), "--pattern", "(unclosed"], "not a valid regular expression"),
], ids=["missing-file", "directory", "bad-pattern"])
def test_cli_usage_errors_exit_2(argv, message, capsys):
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_cli_without_logfile_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["diagnose"])
    assert exit_info.value.code == 2


# --- what the diagnosis says -----------------------------------------------------

def test_render_reads_top_down():
    text = _diagnose_file("kv_pool_oom.journal.log").render()
    order = [text.index(key) for key in ("CRASHED: kv_pool_oom", "phase:", "cause:", "exit:",
                                         "evidence:", "suggestion:")]
    assert order == sorted(order)
    healthy = _diagnose_file("healthy.journal.log").render()
    assert healthy.startswith("NOT CRASHED: the server is serving")
    assert "accept len mean 6.37" in healthy


def test_to_dict_is_json_ready():
    data = _diagnose_file("replay_size.journal-iso.log").to_dict()
    assert json.loads(json.dumps(data)) == data


def test_cause_is_one_line_and_bounded():
    for name, crashed, *_ in CASES:
        cause = _diagnose_file(name).cause
        if crashed:
            assert "\n" not in cause and len(cause) < 300, name


_REAL = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


@pytest.mark.parametrize("log, ends", [
    ("real/h90011.log", "backend='inductor' raised: OutOfResources: out of resource: shared memory, "
                        "Required: 196608, Hardware limit: 65536."),
    ("real/h7025.log", "No processor registered for architecture: ['Qwen3VLForConditionalGeneration']."),
    ("real/h30006.log", "CompilationError: at 1:0: ValueError(\"type fp8e4nv not supported in this "
                        "architecture."),
    ("vllm-real/vs24.log", "raised: RuntimeError: Triton Error [CUDA]: device kernel image is invalid"),
], ids=lambda v: v.split("/")[-1][:12])
def test_a_cause_that_ends_with_a_colon_is_completed_by_the_line_below_that_tells(log, ends):
    """The exception dynamo wrapped, the architecture with no processor, Triton's error after the
    source it quotes and its caret: the cause line names it (before: it stopped at the colon)."""
    cause = dg.diagnose(dg.read_log(str(_REAL / log))).cause
    assert ends in cause and "\n" not in cause, cause


@pytest.mark.parametrize("log, stays", [
    ("real/h10023.log", "Exception: Capture cuda graph failed:"),  # then SGLang's own advice
    ("real/h96009.log", "AssertionError:"),  # no first line: where the message ends is not told
    ("vllm-real/w9121.log", "to (0, 1, 0, 1):"),  # a glog line another writer put between
], ids=lambda v: v.split("/")[-1][:12])
def test_a_colon_before_advice_another_writers_line_or_an_empty_first_line_is_left_as_it_is(log, stays):
    cause = dg.diagnose(dg.read_log(str(_REAL / log))).cause
    assert cause.rstrip().endswith(stays), cause


def test_a_wrapped_message_followed_by_a_log_record_is_not_completed_by_it():
    text = ("Traceback (most recent call last):\n"
            '  File "/x/sglang/srt/model_executor/model_runner.py", line 9, in init\n'
            "    compile()\n"
            "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
            "[2026-12-07 10:00:00] INFO: the next record\n")
    assert dg.diagnose(text).cause.endswith("backend='inductor' raised:")
    told = text.replace("[2026-12-07 10:00:00] INFO: the next record", "RuntimeError: no kernel image")
    assert dg.diagnose(told).cause.endswith("raised: RuntimeError: no kernel image")


def test_kv_pool_advice_names_the_current_fraction():
    result = _diagnose_file("kv_pool_oom.journal.log")
    assert "--mem-fraction-static" in result.suggestion and "0.42" in result.suggestion
    assert any("Not enough memory" in line for line in result.evidence)
    assert result.exit_status == "code=killed, status=9/KILL"


def test_replay_none_names_the_field_from_the_marker_line():
    result = _diagnose_file("replay_none.journal.log")
    assert "--disable-cuda-graph" in result.suggestion
    assert "out_cache_loc" in result.suggestion
    assert any(line.startswith("[2026-11-29 09:53:18 TP0] DFLASH_DIAG") for line in result.evidence)
    assert any("_grouped_foreach_copy_" in line for line in result.evidence)


def test_replay_size_advice_sizes_the_verify_graph_by_budget_plus_one():
    result = _diagnose_file("replay_size.journal-iso.log")
    assert "budget+1" in result.suggestion and "33 tokens per request" in result.suggestion
    assert result.facts["tree_budget"] == 32 and result.facts["max_tree_nodes"] == 33


def test_port_advice_names_the_port():
    assert "30000" in _diagnose_file("port_in_use_bind.plain.log").suggestion


def test_capture_with_inner_oom_says_memory_first():
    assert "ran out of GPU memory" in _diagnose_file("capture_failed_oom.cat.log").suggestion


def test_cuda_oom_advice_depends_on_the_phase():
    assert "weights do not fit" in _diagnose_file("cuda_oom_load.journal-iso.log").suggestion


def test_user_patterns_add_evidence():
    result = _diagnose_file("healthy.journal.log", patterns=[r"Capture cuda graph end", r"tree_budget=\d+"])
    assert not result.crashed
    assert any("Capture cuda graph end" in line for line in result.evidence)
    assert any("Initialized DDTree worker" in line for line in result.evidence)


def test_bad_user_pattern_is_a_config_error():
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        dg.diagnose("", patterns=["[unclosed"])


# --- decode lines and facts --------------------------------------------------------

def test_decode_lines_plain_variant():
    records = dg.parse_decode_lines((LOGS / "healthy.journal.log").read_text())
    assert len(records) == 4
    first = records[0]
    assert (first.running_req, first.token, first.token_usage, first.accept_len, first.accept_rate,
            first.cuda_graph, first.gen_throughput_tok_s, first.queue_req, first.rank) == (
        1, 812, 0.0, 6.41, 0.36, True, 412.33, 0, "TP0")
    summary = dg.summarize_decode(records)
    assert summary["count"] == 4 and summary["accept_len_last"] == 6.22
    assert summary["gen_throughput_tok_s_max"] == 1344.81 and summary["cuda_graph"] is True


def test_decode_lines_hybrid_mamba_variant():
    result = _diagnose_file("healthy_mamba.plain-crlf.log")
    records = dg.parse_decode_lines((LOGS / "healthy_mamba.plain-crlf.log").read_text())
    assert [r.full_token for r in records] == [1536, 1792, 1100]
    assert records[0].token is None and records[0].mamba_usage == 0.04
    assert result.decode["accept_len_mean"] == pytest.approx((4.12 + 4.47 + 3.90) / 3, abs=1e-3)


def test_summarize_decode_mixed_and_empty():
    line = ("Decode batch, #running-req: 1, #token: 8, token usage: 0.00, accept len: 2.00, "
            "accept rate: 0.07, cuda graph: {g}, gen throughput (token/s): {t}, #queue-req: 0")
    records = dg.parse_decode_lines("\n".join([line.format(g="True", t=10), line.format(g="False", t=30)]))
    summary = dg.summarize_decode(records)
    assert summary["cuda_graph"] is None and summary["gen_throughput_tok_s_mean"] == 20
    assert dg.summarize_decode([]) == {"count": 0}


# --- prefixes and phases ----------------------------------------------------------

@pytest.mark.parametrize("line", [
    "Nov 29 09:53:16 gpu-host python[1234]: hello",
    "Nov  9 09:53:16 gpu-host python3[1234]: hello",
    "Nov 29 09:53:16.123456 gpu-host python[1234]: hello",
    "2026-11-29T09:53:16+0000 gpu-host python3[1234]: hello",
    "2026-11-29T09:53:16.123456+00:00 gpu-host python3[1234]: hello",
    "Sun 2026-11-29 09:53:16 UTC gpu-host python3[1234]: hello",
    "[ 1234.567890] gpu-host python3[1234]: hello",
    "1764409996.123456 gpu-host python3[1234]: hello",
    "hello",
], ids=["short", "short-padded-day", "short-precise", "short-iso", "short-iso-precise",
        "short-full", "short-monotonic", "short-unix", "cat"])
def test_strip_prefix(line):
    assert dg.strip_prefix(line) == "hello"


def test_split_lines_handles_ansi_crlf_and_rank_tags():
    text = ("Nov 29 09:53:16 h python[1]: \x1b[31m[2026-11-29 09:53:16 DP0 TP1] Load weight begin\x1b[0m\r\n"
            "[2026-11-29 09:53:17] Memory pool end. avail mem=1 GB\r\n")
    first, second = split_lines(text)
    assert (first.msg, first.rank, first.ident, first.stamped) == ("Load weight begin", "DP0 TP1", "python", True)
    assert (second.msg, second.rank) == ("Memory pool end. avail mem=1 GB", None)


@pytest.mark.parametrize("text, phase", [
    ("", "launch"),
    ("[2026-11-29 09:52:53 TP0] Load weight begin. avail mem=139.28 GB", "load_weights"),
    ("[t TP0] x\n[2026-11-29 09:52:56 TP0] Load weight end. elapsed=3.21 s", "memory_pool"),
    ("[2026-11-29 09:52:57 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1", "memory_pool"),
    ("[2026-11-29 09:52:57 TP0] Capture cuda graph begin. This can take up to several minutes.", "graph_capture"),
    ("[2026-11-29 09:52:57 TP0] Capture decode cuda graph begin. This can take", "graph_capture"),
    ("[2026-11-29 09:53:06] The server is fired up and ready to roll!", "ready"),
    ("The server is fired up and ready to roll!\n[t TP0] Prefill batch, #new-seq: 1", "serving"),
    ("[t TP0] Capture cuda graph begin.\n[t TP0] Prefill batch, #new-seq: 1, #new-token: 7", "graph_capture"),
    ("[t TP0] Prefill batch, #new-seq: 1, #new-token: 7", "serving"),
    ('[t] INFO:     127.0.0.1:4 - "POST /v1/chat/completions HTTP/1.1" 200 OK', "serving"),
    ("[2026-11-29 09:53:06] The server is fired up and ready to roll!\n"
     "[2026-11-29 09:53:07] Load weight begin. avail mem=3 GB", "ready"),
], ids=["empty", "load", "load-end", "kv-new", "capture-old", "capture-new", "ready",
        "prefill-after-ready", "warmup-prefill", "paste-begins-mid-serving", "paste-begins-with-a-200",
        "never-backwards"])
def test_phase_of(text, phase):
    assert dg.phase_of(text) == phase


# --- root-cause rules ----------------------------------------------------------------

_TB = "Traceback (most recent call last):\n  File \"{f}\", line 1, in {fn}\n    x()\n{exc}\n"


def _tb(exc, f="/opt/sglang/python/sglang/srt/managers/scheduler.py", fn="run_scheduler_process"):
    return _TB.format(f=f, fn=fn, exc=exc)


_DURING = "\nDuring handling of the above exception, another exception occurred:\n\n"
_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"


@pytest.mark.parametrize("text, kind", [
    (_tb("RuntimeError: cudnn failed") + _DURING + _tb("Exception: Capture cuda graph failed: cudnn failed"),
     "cuda_graph_capture"),
    (_tb("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB") + _CAUSE
     + _tb("Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2 GiB"),
     "cuda_graph_capture"),
    (_tb("Exception: Capture cuda graph failed: boom") + _DURING + _tb("KeyError: 'x'"), "cuda_graph_capture"),
    (_tb("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.") + _DURING
     + _tb("torch.OutOfMemoryError: CUDA out of memory."), "cuda_oom"),
], ids=["outer-capture-inner-runtime", "outer-capture-inner-oom", "unknown-outer-falls-back",
        "outermost-decides"])
def test_outermost_exception_decides(text, kind):
    assert dg.diagnose(text).kind == kind


def test_wrapper_never_wins_even_when_first():
    text = ("[2026-11-29 09:52:58] Initialization failed. warmup error: " + _tb(
        "AssertionError: res=<Response [502]>, res.text=''",
        f="/opt/sglang/python/sglang/srt/entrypoints/http_server.py", fn="_wait_and_warmup")
            + "[2026-11-29 09:52:58] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
            + "[2026-11-29 09:52:58 TP0] Scheduler hit an exception: " + _tb("KeyError: 'lm_head.weight'"))
    result = dg.diagnose(text)
    assert (result.kind, result.cause) == ("unknown", "KeyError: 'lm_head.weight'")


def test_specific_beats_generic_and_earliest_breaks_ties():
    nccl = "[t TP0] Scheduler hit an exception: " + _tb("RuntimeError: NCCL error: remote process exited")
    oom = "[t TP1] Scheduler hit an exception: " + _tb("torch.OutOfMemoryError: CUDA out of memory. TP1")
    oom0 = "[t TP0] Scheduler hit an exception: " + _tb("torch.OutOfMemoryError: CUDA out of memory. TP0")
    assert dg.diagnose(nccl + oom).kind == "cuda_oom"
    assert dg.diagnose(oom + oom0).cause.endswith("TP1")


def test_interleaved_log_lines_inside_a_traceback():
    text = "\n".join([
        "[2026-11-29 09:53:18 TP1] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/opt/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 1035, in replay',
        "    self.replay_prepare(forward_batch, pp_proxy_tensors)",
        "[2026-11-29 09:53:18 TP0] Decode batch is late",
        '  File "/opt/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 972, in replay_prepare',
        "    self.buffers.populate_from_forward_batch(",
        "[2026-11-29 09:53:18 TP0] Cache flushed successfully!",
        "RuntimeError: The size of tensor a (16) must match the size of tensor b (33) at non-singleton dimension 0",
    ])
    chains = find_chains(split_lines(text))
    assert len(chains) == 1 and [f.func for f in chains[0].outermost.frames] == ["replay", "replay_prepare"]
    assert dg.diagnose(text).kind == "cuda_graph_replay"


def test_size_mismatch_outside_replay_is_not_a_replay_failure():
    text = _tb("RuntimeError: The size of tensor a (16) must match the size of tensor b (33) at dim 0",
               f="/opt/sglang/python/sglang/srt/layers/rotary_embedding.py", fn="forward")
    assert dg.diagnose(text).kind == "unknown"


# --- crashed or not --------------------------------------------------------------------

def test_a_traceback_the_server_survived_is_not_a_crash():
    """A request's traceback (a body that is no JSON) while decoding goes on: no crash; since
    issue 24 it is said as kind request_error, with the error and its next step."""
    result = _diagnose_file("healthy_mamba.plain-crlf.log")
    assert not result.crashed and result.kind == "request_error"
    assert result.cause == "Exception in ASGI application" and "request" in result.suggestion


def test_systemd_failure_without_a_traceback_is_a_crash():
    text = ("Nov 29 09:52:57 h python3[7]: [2026-11-29 09:52:57 TP0] Load weight begin. avail mem=1 GB\n"
            "Nov 29 09:52:58 h systemd[1]: ddlab-x.service: Main process exited, code=exited, status=1/FAILURE\n"
            "Nov 29 09:52:58 h systemd[1]: ddlab-x.service: Failed with result 'exit-code'.\n")
    result = dg.diagnose(text)
    assert (result.crashed, result.kind, result.phase) == (True, "unknown", "load_weights")
    assert result.exit_status == "code=exited, status=1/FAILURE"
    assert result.cause == "main process exited: code=exited, status=1/FAILURE"


@pytest.mark.parametrize("tail, crashed", [
    ("Main process exited, code=exited, status=0/SUCCESS", False),
    ("Main process exited, code=killed, status=11/SEGV", True),
    ("Failed with result 'core-dump'.", True),
], ids=["exit-0", "segv", "core-dump"])
def test_exit_status_alone(tail, crashed):
    assert dg.diagnose(f"ddlab-x.service: {tail}\n").crashed is crashed


def test_only_the_last_run_of_the_unit_is_diagnosed():
    crashed = (LOGS / "kv_pool_oom.journal.log").read_text()
    healthy = (LOGS / "healthy.journal.log").read_text()
    assert dg.diagnose(crashed + healthy).crashed is False
    assert dg.diagnose(healthy + crashed).kind == "kv_pool_oom"


@pytest.mark.parametrize("text", ["", "\n\n", "just some text\nand more", "\x00\x1b[0m"],
                         ids=["empty", "blank", "prose", "control"])
def test_garbage_is_not_a_crash(text):
    result = dg.diagnose(text)
    assert (result.crashed, result.kind, result.phase) == (False, None, "launch")


# --- the same log in every form gives the same verdict ------------------------------

def _as_form(text: str, form: str) -> str:
    lines = [dg.strip_prefix(line) for line in text.splitlines()]
    if form == "cat":
        return "\n".join(lines)
    if form == "short-iso":
        return "\n".join(f"2026-11-29T09:53:16+0000 gpu-7 python3[99]: {line}" for line in lines)
    if form == "crlf-ansi":
        return "\r\n".join(f"\x1b[0m{line}\x1b[0m" if line.startswith("[") else line for line in lines)
    raise ValueError(form)


@pytest.mark.parametrize("form", ["cat", "short-iso", "crlf-ansi"])
@pytest.mark.parametrize("name, crashed, kind, phase, signature", CASES, ids=[c[0] for c in CASES])
def test_verdict_does_not_depend_on_the_log_form(name, crashed, kind, phase, signature, form):
    result = dg.diagnose(_as_form((LOGS / name).read_text(), form))
    assert (result.crashed, result.kind, result.phase) == (crashed, kind, phase), result.render()


def test_public_api():
    for name in dg.__all__:
        assert hasattr(dg, name), name


# --- held-out logs: written separately from the signature regexes -------------------

HELDOUT = [  # file, crashed, kind, phase (expectations fixed before the first run)
    ("h01_kv_pool_dp.journal-iso.log", True, "kv_pool_oom", "memory_pool"),
    ("h02_capture_old.plain.log", True, "cuda_graph_capture", "graph_capture"),
    ("h03_replay_none_subscript.journal-precise.log", True, "cuda_graph_replay", "serving"),
    ("h04_replay_broadcast.cat.log", True, "cuda_graph_replay", "serving"),
    ("h05_oom_load_oldtorch.journal.log", True, "cuda_oom", "load_weights"),
    ("h06_unrecognised.plain.log", True, "bad_argument", "launch"),
    ("h07_unknown_algo_chained.journal-iso-precise.log", True, "bad_argument", "launch"),
    ("h08_port_zmq.journal.log", True, "port_in_use", "launch"),
    ("h09_healthy_dp.journal-iso-precise.log", False, None, "serving"),
    ("h10_model_local_missing.cat.log", True, "model_not_found", "launch"),
    ("h11_nccl_watchdog.plain.log", True, "nccl", "serving"),
    ("h12_health.journal.log", True, "health_check", "serving"),
    ("h13_kv_pool_newtext.plain-crlf.log", True, "kv_pool_oom", "memory_pool"),
    ("h14_bad_float.plain.log", True, "bad_argument", "launch"),
    ("h15_two_ranks_linewise.journal.log", True, "cuda_graph_replay", "serving"),
    ("h16_healthy_nograph.cat.log", False, None, "serving"),
    ("h17_segfault.plain.log", True, "native_crash", "serving"),  # unknown before native_crash existed
]


@pytest.mark.parametrize("name, crashed, kind, phase", HELDOUT, ids=[h[0] for h in HELDOUT])
def test_heldout_logs(name, crashed, kind, phase):
    result = _diagnose_file(f"heldout/{name}")
    assert (result.crashed, result.kind, result.phase) == (crashed, kind, phase), result.render()


def test_heldout_details():
    none_field = _diagnose_file("heldout/h03_replay_none_subscript.journal-precise.log")
    assert "forward_batch.out_cache_loc_swa" in none_field.suggestion
    sized = _diagnose_file("heldout/h04_replay_broadcast.cat.log")
    assert "65 tokens per request" in sized.suggestion
    healthy = _diagnose_file("heldout/h09_healthy_dp.journal-iso-precise.log")
    assert healthy.decode["accept_len_mean"] == pytest.approx(7.1) and healthy.facts["tree_budget"] == 48
    assert _diagnose_file("heldout/h16_healthy_nograph.cat.log").decode["cuda_graph"] is False
    nccl = _diagnose_file("heldout/h11_nccl_watchdog.plain.log")
    assert nccl.cause.startswith("[Rank 1] Watchdog caught collective operation timeout")
    assert "signal in native code" in _diagnose_file("heldout/h17_segfault.plain.log").suggestion


def test_ctrl_c_is_a_stop_not_a_crash():
    text = ("[2026-11-29 09:53:06] The server is fired up and ready to roll!\n"
            + _tb("KeyboardInterrupt", f="/opt/sglang/python/sglang/launch_server.py", fn="<module>"))
    assert dg.diagnose(text).crashed is False


def test_a_traceback_stamped_on_every_line_is_still_read():
    stamp = "[2026-11-29 09:52:57 TP0] "
    body = _tb("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
               f="/opt/sglang/python/sglang/srt/model_executor/model_runner.py", fn="init_memory_pool")
    text = "\n".join(stamp + line for line in ("Scheduler hit an exception: " + body).splitlines())
    assert dg.diagnose(text).kind == "kv_pool_oom"


@pytest.mark.parametrize("fn, phase", [
    ("load_weights", "load_weights"), ("init_memory_pool", "memory_pool"),
    ("capture_one_batch_size", "graph_capture"), ("forward", "launch"),
], ids=["load", "pool", "capture", "no-hint"])
def test_frames_imply_the_phase_when_phase_lines_are_missing(fn, phase):
    text = _tb("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
               f="/opt/sglang/python/sglang/srt/x.py", fn=fn)
    assert dg.diagnose(text).phase == phase


@pytest.mark.parametrize("name", ["capture_failed.journal-iso-precise.log",
                                  "independent/cuda_graph_capture__inner-cuda-oom-chained-journal-short.log"])
def test_a_chained_traceback_keeps_its_separator_in_the_evidence(name):
    """Issue 23 item 16: the evidence of a chained traceback showed the inner block's error
    and the outer block's frames with nothing between them; the separator line (and the
    outer block's own header) says how they are joined, in order."""
    found = dg.diagnose((LOGS / name).read_text())
    evidence = found.evidence
    joint = next(n for n, line in enumerate(evidence)
                 if line.startswith("During handling of the above exception"))
    assert any(line.startswith(("RuntimeError", "torch.OutOfMemoryError"))
               for line in evidence[:joint]), "the inner error comes before the separator"
    assert evidence[joint + 1] == "Traceback (most recent call last):"
    assert any(line.startswith("Exception: Capture cuda graph failed") for line in evidence[joint:])
