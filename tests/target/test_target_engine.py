"""ddlab.target's engine in-process: lossless decoding, batching, memory, graph buffers, field bugs.

Lossless means token for token: every algorithm, budget, cap, batch size and
graph mode must produce exactly what plain autoregressive decoding produces.
"""

import logging
import re
import traceback

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlab.target.args import parse_args
from ddlab.target.engine import Engine, Req

PROMPTS = [
    b"def parse_args(argv=None):\n    parser = argparse.ArgumentParser(",
    b"import os\nimport sys\n\n\nclass ",
    b"    for i in range(len(self.items)):\n        if self.items[i] ",
    b"The quick brown fox jumps over the lazy dog. " * 3,
    bytes(range(40, 90)),
    b"#",
]
PROMPTS = [list(p) for p in PROMPTS]
NEW = 48


def engine(*flags) -> Engine:
    return Engine(parse_args(["--decode-log-interval", "1000", *flags]))


@pytest.fixture(scope="module")
def reference():
    """Plain autoregressive decoding, eager, one request at a time."""
    e = engine("--disable-cuda-graph")
    return [e.generate([p], NEW)[0].output_ids for p in PROMPTS]


def dd(budget, cap, *more):
    return ("--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", str(budget),
            "--speculative-ddtree-topk-cap", str(cap), *more)


CONFIGS = {
    "none-graph": (),
    "dflash": ("--speculative-algorithm", "DFLASH"),
    "dflash-block4-eager": ("--speculative-algorithm", "DFLASH", "--speculative-dflash-block-size", "4",
                            "--disable-cuda-graph"),
    "ddtree-b1-k1": dd(1, 1),
    "ddtree-b4-k2": dd(4, 2),
    "ddtree-b16-k4": dd(16, 4),
    "ddtree-b16-k4-eager": dd(16, 4, "--disable-cuda-graph"),
    "ddtree-b33-k8": dd(33, 8),
    "ddtree-b64-k1-chain-capped": dd(64, 1),
    "ddtree-b64-k8-block8": dd(64, 8, "--speculative-dflash-block-size", "8"),
}


@pytest.mark.slow
@pytest.mark.parametrize("flags", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("together", [False, True], ids=["bs1", "batched"])
def test_lossless(reference, flags, together):
    e = engine(*flags)
    if together:
        out = [r.output_ids for r in e.generate(PROMPTS, NEW)]
    else:
        out = [e.generate([p], NEW)[0].output_ids for p in PROMPTS]
    assert out == reference


def test_lossless_when_requests_arrive_and_leave_mid_decode(reference):
    """Slots are reused and batches change size (graph padding 3 -> 4) while others decode."""
    e = engine(*dd(16, 4), "--cuda-graph-bs", "1", "2", "4", "--max-running-requests", "3")
    reqs = [Req(p, NEW if i % 2 else NEW // 3) for i, p in enumerate(PROMPTS)]
    for r in reqs[:2]:
        e.submit(r)
    for _ in range(3):
        e.step()
    for r in reqs[2:]:
        e.submit(r)
    while e.step():
        pass
    assert [r.output_ids for r in reqs] == [ref[:r.max_new_tokens] for r, ref in zip(reqs, reference)]


@pytest.fixture(scope="module")
def ddtree_engine():
    return engine(*dd(8, 2))


@pytest.fixture(scope="module")
def plain_engine():
    return engine("--disable-cuda-graph")


@pytest.mark.slow
@given(st.binary(min_size=1, max_size=80), st.integers(1, 40))
@settings(max_examples=25, deadline=None)
def test_lossless_on_any_bytes(ddtree_engine, plain_engine, prompt, new):
    got = ddtree_engine.generate([list(prompt)], new)[0]
    want = plain_engine.generate([list(prompt)], new)[0]
    assert got.output_ids == want.output_ids
    assert got.finish_reason == {"type": "length", "length": new}


def test_spec_counters_are_real(ddtree_engine):
    r = ddtree_engine.generate([PROMPTS[0]], 64)[0]
    meta = r.meta_info(block_size=16)
    assert meta["completion_tokens"] == 64 and 1 <= meta["spec_verify_ct"] <= 63
    assert meta["spec_accept_length"] == pytest.approx(64 / meta["spec_verify_ct"])
    assert meta["spec_num_proposed_drafts"] == meta["spec_verify_ct"] * 15


def test_stop_string_and_stop_token(reference, plain_engine):
    text = bytes(reference[0])
    stop = text[10:13].decode()
    r = plain_engine.generate([PROMPTS[0]], NEW, stop=[stop])[0]
    assert bytes(r.output_ids).endswith(stop.encode())
    assert r.finish_reason == {"type": "stop", "matched": stop}
    r = plain_engine.generate([PROMPTS[0]], NEW, stop_token_ids=[reference[0][5]])[0]
    assert r.output_ids == reference[0][:reference[0].index(reference[0][5]) + 1]


def test_request_longer_than_the_context_is_refused(plain_engine):
    with pytest.raises(ValueError, match=r"maximum context length of 320 tokens.*300 tokens from the input"):
        plain_engine.validate(Req([1] * 300, 21))


def test_decode_log_line_has_real_figures(caplog):
    caplog.set_level(logging.INFO, logger="ddlab.target")
    e = Engine(parse_args([*dd(16, 4), "--decode-log-interval", "4"]))
    e.generate(PROMPTS[:2], 40)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Decode batch")]
    assert lines, "no Decode batch line"
    m = re.fullmatch(r"Decode batch, #running-req: (\d+), #token: (\d+), token usage: [\d.]+, "
                     r"accept len: ([\d.]+), accept rate: [\d.]+, cuda graph: True, "
                     r"gen throughput \(token/s\): ([\d.]+), #queue-req: 0", lines[0])
    assert m and m[1] == "2" and float(m[3]) >= 1 and float(m[4]) > 0
    assert any(r.getMessage().startswith("Prefill batch, #new-seq: 2, #new-token: ") for r in caplog.records)


def test_kv_pool_that_cannot_hold_one_request_fails_like_sglang():
    with pytest.raises(RuntimeError,
                       match=r"^Not enough memory\. Please try to increase --mem-fraction-static\."):
        engine("--mem-fraction-static", "0.001")


def test_a_small_budget_lowers_max_running_requests():
    e = engine(*dd(16, 4), "--device-memory-gb", "0.05", "--mem-fraction-static", "0.7")
    assert 1 <= e.max_running_requests < 48


def test_static_buffers_that_do_not_fit_fail_capture_like_sglang():
    with pytest.raises(Exception, match=r"(?s)Capture cuda graph failed: .*Possible solutions:\n1\. set "
                                        r"--mem-fraction-static to a smaller value") as err:
        engine(*dd(64, 4), "--device-memory-gb", "0.05", "--mem-fraction-static", "0.99")
    assert type(err.value) is Exception


def crash_of(e, new=8):
    with pytest.raises(Exception) as err:
        e.generate([PROMPTS[0]], new)
    return err.value, "".join(traceback.format_exception(err.value))


def test_dropped_field_crashes_the_graph_replay_only(reference):
    e = engine(*dd(16, 4), "--debug-drop-verify-field", "num_token_non_padded")
    assert e.generate([PROMPTS[0]], 1)[0].output_ids == reference[0][:1]  # prefill only: no verify
    exc, tb = crash_of(e)
    assert isinstance(exc, TypeError) and "NoneType" in str(exc)
    assert "in _grouped_foreach_copy_" in tb and "in populate_from_forward_batch" in tb
    assert "in replay_prepare" in tb
    eager = engine(*dd(16, 4), "--debug-drop-verify-field", "num_token_non_padded", "--disable-cuda-graph")
    assert eager.generate([PROMPTS[0]], NEW)[0].output_ids == reference[0]


def test_graph_sized_by_block_size_mismatches_ddtree_batches():
    e = engine(*dd(32, 4), "--debug-graph-tokens-per-req", "16")
    exc, tb = crash_of(e)
    assert re.search(r"size of tensor a \(16\) must match the size of tensor b \(33\)", str(exc))
    assert "in _grouped_foreach_copy_" in tb
