"""Draft trees: DDTree's best-first tree, DFlash's chain, and the verify walk.

Contract. A draft tree for one request is three equal-length lists, node 0
being the root, i.e. the pending bonus token (sampled, not yet in the KV
cache): ``tokens``, ``parent`` (root: itself) and ``depth`` (root: 0). Node
positions are ``start + depth``, never ``start + index``. Every node's parent
comes before it, so an accepted path is increasing in index.

- ``ddtree(top_logp, top_ids, budget)``: the B most probable prefixes under
  per-position marginals (a path's score is the sum of its log-probs), built
  best-first with a heap: pop the best, push its next sibling and its first
  child, stop after B pops (sglang.md, "DDTree in one paragraph"). The
  per-depth top-k cap is the width of ``top_ids``: ranks past it are never
  considered; the tree is exact when cap >= min(B, vocab).
- ``chain(ids)``: DFlash's draft, the argmax at every position.
- ``ancestor_mask(parent, n_steps)``: (R, T, T) bool, node i sees node j iff
  j is i or one of its ancestors: the tree attention mask.
- ``walk(tokens, parent, target_ids)``: from the root, follow the child whose
  token equals the target's argmax at the current node; returns the accepted
  path (node indices, root first) and the next bonus token (the target's
  argmax at the path's end). This is what makes speculation lossless.
"""

from __future__ import annotations

import heapq

import torch
import torch.nn.functional as F

__all__ = ["ddtree", "chain", "pad_tree", "ancestor_mask", "walk"]


def ddtree(top_logp, top_ids, budget, root_token):
    """Best-first tree over per-depth top-k lists (Python lists, (L, K)).

    Returns (tokens, parent, depth) with at most budget+1 nodes (root first);
    fewer when the capped tree holds fewer than ``budget`` nodes.
    """
    L, K = len(top_ids), len(top_ids[0])
    tokens, parent, depth = [root_token], [0], [0]
    # heap item: (-score, depth index d (0-based), rank r, parent node, parent score)
    heap = [(-top_logp[0][0], 0, 0, 0, 0.0)]
    while heap and len(tokens) <= budget:
        neg, d, r, par, par_score = heapq.heappop(heap)
        node = len(tokens)
        tokens.append(top_ids[d][r])
        parent.append(par)
        depth.append(d + 1)
        if r + 1 < K:  # next sibling: same parent, next rank at this depth
            heapq.heappush(heap, (-(par_score + top_logp[d][r + 1]), d, r + 1, par, par_score))
        if d + 1 < L:  # first child: best rank at the next depth
            heapq.heappush(heap, (neg - top_logp[d + 1][0], d + 1, 0, node, -neg))
    return tokens, parent, depth


def chain(ids, root_token):
    """DFlash's chain: root, then the drafter's argmax at every position."""
    n = len(ids)
    return [root_token, *ids], [0, *range(n)], list(range(n + 1))


def pad_tree(tokens, parent, depth, size):
    """Pad a tree to ``size`` nodes with inert nodes (own parent, depth 0, seen by none)."""
    n = len(tokens)
    return tokens + [0] * (size - n), parent + list(range(n, size)), depth + [0] * (size - n)


def ancestor_mask(parent, max_depth):
    """(R, T) parent indices -> (R, T, T) bool mask: ancestors and self.

    Reachability by repeated squaring of (I + parent edges): paths of length
    up to 2**k after k squarings, so ceil(log2(max_depth)) matrix products.
    """
    T = parent.shape[1]
    reach = F.one_hot(parent, T).float() + torch.eye(T, device=parent.device)
    for _ in range(max(0, max_depth - 1).bit_length()):
        reach = torch.bmm(reach, reach).clamp_(max=1.0)
    return reach > 0


def walk(tokens, parent, target_ids):
    """Accepted path (node indices, root first) and the next bonus token."""
    children = {}
    for i in range(1, len(tokens)):
        if parent[i] != i:
            children[(parent[i], tokens[i])] = i
    path, node = [0], 0
    while True:
        nxt = children.get((node, target_ids[node]))
        if nxt is None:
            return path, target_ids[node]
        path.append(nxt)
        node = nxt
