"""ddlab.diagnosis.facts: what a log states about itself, in both server_args forms."""

from __future__ import annotations

import pytest

from ddlab.diagnosis.facts import parse_facts, version_hint
from ddlab.diagnosis.logtext import split_lines

REPR_0_4 = ("[2026-11-30 09:14:02] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', "
            "tokenizer_path='Qwen/Qwen3-8B', mem_fraction_static=0.8, tp_size=1, cuda_graph_max_bs=80, "
            "disable_cuda_graph=False, speculative_algorithm='EAGLE3', speculative_num_draft_tokens=32)")
REPR_0_5_10 = REPR_0_4.replace("disable_cuda_graph=False",
                               "disable_cuda_graph=False, speculative_draft_attention_backend=None")
REPR_0_5_14 = REPR_0_4.replace("cuda_graph_max_bs=80",
                               "cuda_graph_max_bs_decode=80, cuda_graph_backend_decode='full'")
DICT_0_5_20 = ("[2026-11-30 19:36:05] server_args={'model_path': '/models/Qwen3-8B', "
               "'mem_fraction_static': 0.85, 'tp_size': 1, "
               "'cuda_graph_config': {'decode': {'backend': 'full', 'max_bs': 48}}, "
               "'speculative_algorithm': 'DFLASH', 'speculative_num_draft_tokens': 16, 'port': 30000}")


@pytest.mark.parametrize("line, release", [
    (REPR_0_4, "0.4.10.post2"), (REPR_0_5_10, "0.5.10"), (REPR_0_5_14, "0.5.14"), (DICT_0_5_20, "0.5.20"),
    ("[t] Load weight begin.", None),
], ids=["repr-0.4", "repr-0.5.10", "repr-0.5.14", "dict-0.5.20", "no-args"])
def test_version_hint_from_the_server_args_shape(line, release):
    assert version_hint(line) == release


@pytest.mark.parametrize("line, facts", [
    (REPR_0_4, {"model_path": "Qwen/Qwen3-8B", "mem_fraction_static": 0.8,
                "speculative_algorithm": "EAGLE3", "speculative_num_draft_tokens": 32,
                "cuda_graph_max_bs": 80}),
    (DICT_0_5_20, {"model_path": "/models/Qwen3-8B", "mem_fraction_static": 0.85, "port": 30000,
                   "speculative_algorithm": "DFLASH", "speculative_num_draft_tokens": 16}),
    (DICT_0_5_20[:150], {"model_path": "/models/Qwen3-8B", "mem_fraction_static": 0.85}),
], ids=["repr", "dict", "dict-cut-by-the-paste"])
def test_server_args_facts_in_both_forms(line, facts):
    got = parse_facts(split_lines(line))
    assert facts.items() <= got.items(), got


def test_worker_init_lines_name_the_algorithm():
    ddtree = "[t TP0] Initialized DDTree worker. block_size=16, tree_budget=32, max_tree_nodes=33"
    dflash = "[t] Initialized DFLASH draft runner. model=DFlashDraftModel, block_size=16"
    assert parse_facts(split_lines(ddtree)) == {"block_size": 16, "tree_budget": 32, "max_tree_nodes": 33,
                                                "speculative_algorithm": "DDTREE"}
    assert parse_facts(split_lines(dflash)) == {"block_size": 16, "speculative_algorithm": "DFLASH"}


def test_the_server_args_algorithm_wins_over_a_worker_line():
    text = DICT_0_5_20 + "\n[t] Initialized DFLASH draft runner. block_size=16\n"
    assert parse_facts(split_lines(text))["speculative_algorithm"] == "DFLASH"
    assert parse_facts(split_lines(REPR_0_4 + "\n[t TP0] Initialized DDTree worker. tree_budget=8\n")
                       )["speculative_algorithm"] == "EAGLE3"
