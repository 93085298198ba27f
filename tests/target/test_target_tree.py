"""ddlab.target.tree: DDTree's best-first tree, the chain, the tree mask, the verify walk."""

import heapq
import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def _tree():
    """ddlab.target.tree, imported at first use: it imports torch (about 2 CPU-s), which a
    pytest worker that runs none of these tests should not pay while it collects them."""
    from ddlab.target import tree
    return tree


def marginals(rng, L, K, V=256):
    """Per-depth top-K (log-probs descending, distinct ids), as the drafter gives them."""
    vals, ids = [], []
    for _ in range(L):
        p = sorted((rng.random() for _ in range(K)), reverse=True)
        vals.append([math.log(x / (sum(p) + 1.0)) for x in p])
        ids.append(rng.sample(range(V), K))
    return vals, ids


def best_prefixes(vals, budget, cap):
    """Brute force: the ``budget`` highest-scoring prefixes (rank tuples), ranks < cap."""
    L = len(vals)
    scored = []
    for depth in range(1, L + 1):
        for ranks in itertools.product(range(min(cap, len(vals[0]))), repeat=depth):
            if len(scored) > 20000:
                break
            scored.append((sum(vals[d][r] for d, r in enumerate(ranks)), ranks))
    return [r for _, r in heapq.nlargest(budget, scored)]


def node_ranks(tokens, parent, depth, ids):
    """Each non-root node's path as a tuple of ranks."""
    out = {0: ()}
    for i in range(1, len(tokens)):
        out[i] = out[parent[i]] + (ids[depth[i] - 1].index(tokens[i]),)
    return [out[i] for i in range(1, len(tokens))]


@pytest.mark.parametrize("L,K,budget,cap", [(3, 4, 5, 4), (4, 3, 12, 3), (3, 5, 20, 2), (5, 2, 8, 1),
                                            (2, 4, 16, 4)],
                         ids=["small", "deep", "capped", "chain-like", "exhaustive"])
def test_ddtree_holds_the_most_probable_prefixes(L, K, budget, cap):
    rng = random.Random(budget * 7 + cap)
    vals, ids = marginals(rng, L, K)
    top_vals = [v[:cap] for v in vals]
    top_ids = [i[:cap] for i in ids]
    tokens, parent, depth = _tree().ddtree(top_vals, top_ids, budget, root_token=7)
    got = node_ranks(tokens, parent, depth, top_ids)
    want = best_prefixes(top_vals, budget, cap)
    score = lambda ranks: sum(top_vals[d][r] for d, r in enumerate(ranks))
    assert sorted(map(score, got)) == pytest.approx(sorted(map(score, want)))
    assert tokens[0] == 7 and parent[0] == 0 and depth[0] == 0


@given(st.integers(1, 6), st.integers(1, 5), st.integers(1, 40), st.integers(0, 10 ** 6))
@settings(max_examples=60, deadline=None)
def test_ddtree_is_a_well_formed_tree(L, cap, budget, seed):
    vals, ids = marginals(random.Random(seed), L, cap)
    tokens, parent, depth = _tree().ddtree(vals, ids, budget, root_token=1)
    assert len(tokens) == min(budget + 1, 1 + sum(cap ** d for d in range(1, L + 1)))
    siblings = set()
    for i in range(1, len(tokens)):
        assert parent[i] < i and depth[i] == depth[parent[i]] + 1 <= L
        assert (parent[i], tokens[i]) not in siblings
        siblings.add((parent[i], tokens[i]))


def test_chain_and_padding():
    tokens, parent, depth = _tree().chain([5, 6, 7], root_token=4)
    assert (tokens, parent, depth) == ([4, 5, 6, 7], [0, 0, 1, 2], [0, 1, 2, 3])
    tokens, parent, depth = _tree().pad_tree(tokens, parent, depth, 6)
    assert parent[4:] == [4, 5] and depth[4:] == [0, 0] and len(tokens) == 6


@given(st.integers(1, 30), st.integers(1, 4), st.integers(0, 10 ** 6))
@settings(max_examples=40, deadline=None)
def test_ancestor_mask_is_ancestors_and_self(budget, cap, seed):
    import torch

    vals, ids = marginals(random.Random(seed), 6, cap)
    tokens, parent, depth = _tree().pad_tree(*_tree().ddtree(vals, ids, budget, 0), budget + 3)
    mask = _tree().ancestor_mask(torch.tensor([parent]), max(depth))[0].tolist()
    for i in range(len(tokens)):
        seen, j = {i}, i
        while parent[j] != j:
            j = parent[j]
            seen.add(j)
        assert mask[i] == [k in seen for k in range(len(tokens))]


def test_walk_follows_the_targets_argmax():
    #        0(root=9)
    #       /        \
    #    1(a=1)     2(b=2)
    #     |            |
    #    3(c=3)     4(d=4)
    tokens, parent = [9, 1, 2, 3, 4], [0, 0, 0, 1, 2]
    assert _tree().walk(tokens, parent, [2, 0, 4, 0, 5]) == ([0, 2, 4], 5)
    assert _tree().walk(tokens, parent, [1, 8, 0, 0, 0]) == ([0, 1], 8)
    assert _tree().walk(tokens, parent, [6, 0, 0, 0, 0]) == ([0], 6)
