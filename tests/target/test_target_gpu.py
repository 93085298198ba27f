"""ddlab.target on CUDA: captured graphs replay losslessly, and the field bugs fail the same way there.

A skipped field (``--debug-drop-verify-mode skip``) leaves the captured
graph reading a stale buffer, as on CPU: the same wrong tokens, every run.

Skipped, with the reason, on machines without a CUDA device (CI has none);
the H200 results are recorded in docs/target.md.
"""

import pytest

from ddlab.target.args import parse_args


def cuda() -> bool:
    """Asked when a test is set up, not at collection: importing torch costs about 2 CPU-s,
    which a pytest worker that runs none of these tests should not pay."""
    import torch
    return torch.cuda.is_available()


pytestmark = [pytest.mark.gpu, pytest.mark.skipif("not cuda()", reason="needs a CUDA device (none here)")]

PROMPTS = [list(b"def parse_args(argv=None):\n    parser = argparse.ArgumentParser("),
           list(b"import os\nimport sys\n\n\nclass "), list(b"    for i in range(len(self.items)):\n"),
           list(b"#")]


def engine(*flags):
    from ddlab.target.engine import Engine
    return Engine(parse_args(["--device", "cuda", "--decode-log-interval", "1000", *flags]))


@pytest.fixture(scope="module")
def reference():
    e = engine("--disable-cuda-graph")
    return [e.generate([p], 64)[0].output_ids for p in PROMPTS]


CONFIGS = {
    "none": (),
    "dflash": ("--speculative-algorithm", "DFLASH"),
    "ddtree-b16-k4": ("--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", "16",
                      "--speculative-ddtree-topk-cap", "4"),
    "ddtree-b64-k8": ("--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", "64",
                      "--speculative-ddtree-topk-cap", "8"),
}


@pytest.mark.parametrize("flags", CONFIGS.values(), ids=CONFIGS.keys())
def test_cuda_graphs_are_captured_and_lossless(reference, flags):
    import torch

    e = engine(*flags)
    assert e.runner.graph_runner.graphs, "no torch.cuda.CUDAGraph captured"
    assert all(isinstance(g, torch.cuda.CUDAGraph) for g in e.runner.graph_runner.graphs.values())
    assert [e.generate([p], 64)[0].output_ids for p in PROMPTS] == reference
    assert [r.output_ids for r in e.generate(PROMPTS[:3], 64)] == reference[:3]  # padded to bs 4
    assert e.runner.last_used_graph


RAISES = {"0.5.23": AttributeError, "0.4": TypeError}


@pytest.mark.parametrize("fmt", RAISES, ids=RAISES.keys())
def test_dropped_field_fails_the_cuda_graph_replay(fmt):
    e = engine(*CONFIGS["ddtree-b16-k4"], "--debug-drop-verify-field", "num_token_non_padded",
               "--debug-drop-verify-mode", "raise", "--log-format", fmt)
    with pytest.raises(RAISES[fmt], match="NoneType"):
        e.generate([PROMPTS[0]], 8)


@pytest.mark.parametrize("field", ["num_token_non_padded", "seq_lens"])
def test_a_skipped_field_replays_the_captured_graph_on_a_stale_buffer(reference, field):
    skip = ("--debug-drop-verify-field", field, "--debug-drop-verify-mode", "skip")
    runs = [[r.output_ids for r in engine(*CONFIGS["ddtree-b16-k4"], *skip).generate(PROMPTS, 64)]
            for _ in range(2)]
    assert runs[0] != reference and runs[0] == runs[1]
    eager = engine(*CONFIGS["ddtree-b16-k4"], *skip, "--disable-cuda-graph").generate(PROMPTS, 64)
    assert [r.output_ids for r in eager] == reference


def test_block_sized_graph_fails_ddtree_replay_with_a_size_mismatch_in_0_4():
    e = engine("--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", "32",
               "--debug-graph-tokens-per-req", "16", "--log-format", "0.4")
    with pytest.raises(RuntimeError, match=r"size of tensor a \(16\) must match the size of tensor b \(33\)"):
        e.generate([PROMPTS[0]], 8)


def test_block_sized_graph_is_skipped_by_0_5_23s_width_guard(reference):
    e = engine("--speculative-algorithm", "DDTREE", "--speculative-ddtree-budget", "32",
               "--debug-graph-tokens-per-req", "16")
    assert e.generate([PROMPTS[0]], 64)[0].output_ids == reference[0]
    assert not e.runner.last_used_graph


# --- the vLLM dialect on CUDA (issue 28 item 4): the same engine, vLLM's flags ----------------

def vllm_engine(*flags):
    from ddlab.target.engine import Engine
    from ddlab.target.vllm_args import parse_vllm_args

    return Engine(parse_vllm_args(["--device", "cuda", *flags]))


VLLM_CONFIGS = {
    "eagle3-k4": ("-sc", '{"method": "eagle3", "num_speculative_tokens": 4}'),
    "eagle-k15": ("-sc", '{"method": "eagle", "num_speculative_tokens": 15}'),
    "ngram-k4": ("-sc", '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, '
                        '"prompt_lookup_max": 3}'),
}


@pytest.mark.parametrize("flags", VLLM_CONFIGS.values(), ids=VLLM_CONFIGS.keys())
def test_vllm_dialect_graphs_are_captured_and_lossless(reference, flags):
    e = vllm_engine(*flags)
    assert e.runner.graph_runner.graphs and e.spec.num_draft_slots in (4, 15)
    assert [e.generate([p], 64)[0].output_ids for p in PROMPTS] == reference
    assert [r.output_ids for r in e.generate(PROMPTS[:3], 64)] == reference[:3]
    assert e.metrics.num_drafts > 0 and e.runner.last_used_graph
    eager = vllm_engine(*flags, "--enforce-eager")
    assert eager.runner.graph_runner is None
    assert [r.output_ids for r in eager.generate(PROMPTS, 64)] == reference


def test_vllm_dialect_replay_crash_on_cuda():
    e = vllm_engine(*VLLM_CONFIGS["eagle3-k4"], "--debug-drop-verify-field", "positions")
    with pytest.raises(TypeError, match="NoneType"):
        e.generate([PROMPTS[0]], 8)
