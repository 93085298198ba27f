"""One decode step for a batch: draft, build trees, verify in one forward, accept.

Contract: ``SpecConfig`` resolves the speculative flags against the drafter
(SGLang's defaults: block size from the drafter's config, DDTree budget
block_size-1, top-k cap ``$SGLANG_DDTREE_MAX_TOPK`` or 6) and says how many
tokens each request sends to verify: 1 without speculation, the block size
for DFLASH, budget+1 for DDTREE.

``decode_step(runner, spec, reqs)`` advances every running request by one
verify: the drafter proposes (a chain for DFLASH, a best-first tree for
DDTREE, nothing without speculation), the target scores every request's
tree in one batched forward under the tree attention mask, each request
keeps the path its own argmax follows plus the next bonus token, and the
KV pool keeps only the root and the accepted path, moved into path order.
Returns, per request, the tokens it gained and its accept length (root +
accepted drafts = tokens gained). Greedy, so lossless by construction:
every emitted token is the target's argmax after the emitted prefix.
"""

from __future__ import annotations

import torch

from ddlab.target.args import speculative_algorithm
from ddlab.target.checkpoint import DEFAULT_DRAFTER
from ddlab.target.cuda_graph_runner import ForwardBatch
from ddlab.target.tree import ancestor_mask, chain, ddtree, pad_tree, walk

__all__ = ["SpecConfig", "decode_step", "draft_path"]


class SpecConfig:
    def __init__(self, args):
        # None, DFLASH, DDTREE; or NGRAM (the vLLM dialect's prompt lookup: no drafter)
        self.ngram = getattr(args, "ngram", None)  # (min n, max n) or None
        self.algorithm = "NGRAM" if self.ngram else speculative_algorithm(args.speculative_algorithm)
        self.draft_path = None if self.ngram else draft_path(args)
        self.block_size = args.speculative_dflash_block_size or args.speculative_num_draft_tokens
        self.budget, self.topk_cap = args.speculative_ddtree_budget, args.speculative_ddtree_topk_cap
        self.tokens_per_req = 1

    @property
    def uses_drafter(self) -> bool:
        return self.algorithm in ("DFLASH", "DDTREE")

    @property
    def num_draft_slots(self) -> int:
        """Draft tokens per request and step at most (vLLM's ``num_speculative_tokens``)."""
        return self.tokens_per_req - 1

    def resolve(self, drafter):
        """Fill defaults from the drafter's config and check the flags against it."""
        if self.algorithm == "NGRAM":
            self.tokens_per_req = self.block_size
            return
        if drafter is None:
            self.block_size = self.budget = None
            return
        most = drafter.cfg.block_size
        self.block_size = self.block_size or most
        if not 2 <= self.block_size <= most:
            raise ValueError(f"speculative_dflash_block_size={self.block_size}: the drafter "
                             f"{self.draft_path} supports 2..{most}")
        if self.algorithm == "DDTREE":
            self.budget = self.budget or self.block_size - 1
            self.topk_cap = self.topk_cap or 6
            self.tokens_per_req = self.budget + 1
        else:
            self.tokens_per_req = self.block_size

    def describe(self, words, drafter_arch: str) -> str | None:
        """The speculative worker's init line (DDTree's own; DFLASH's as ``words`` word it)."""
        if self.algorithm == "DDTREE":
            return (f"Initialized DDTree worker. block_size={self.block_size}, "
                    f"tree_budget={self.budget}, max_tree_nodes={self.budget + 1}, topk_cap={self.topk_cap}")
        return words.draft_runner(self.algorithm, self.block_size, drafter_arch)


def draft_path(args) -> str | None:
    """The drafter to load: the flag, else the built-in target's own drafter; speculation
    without one is SGLang's ValueError (0.5.23 arg_groups/speculative_hook.py:324-327,
    DDTREE too)."""
    path = args.speculative_draft_model_path or DEFAULT_DRAFTER.get(args.model_path)
    if speculative_algorithm(args.speculative_algorithm) and not path:
        raise ValueError("DFLASH speculative decoding requires setting --speculative-draft-model-path.")
    return path


def ngram_proposal(ids: list[int], k: int, n_min: int, n_max: int) -> list[int]:
    """Prompt lookup on a request's own tokens (vLLM's ``ngram`` method): the longest suffix of
    ``ids`` (n_max down to n_min tokens) that occurred earlier; the up to ``k`` tokens that
    followed its most recent earlier occurrence. [] when no suffix recurs."""
    for n in range(min(n_max, len(ids) - 1), n_min - 1, -1):
        suffix = ids[-n:]
        for start in range(len(ids) - n - 1, -1, -1):
            if ids[start:start + n] == suffix:
                return ids[start + n:start + n + k]
    return []


def _trees(runner, spec, dev_in, bonus, reqs=None):
    """Each request's draft tree as (tokens, parent, depth) lists, padded to T nodes."""
    T = spec.tokens_per_req
    if spec.algorithm is None:
        return [([b], [0], [0]) for b in bonus]
    if spec.algorithm == "NGRAM":
        return [pad_tree(*chain(ngram_proposal(r.input_ids + r.output_ids, T - 1, *spec.ngram), b), T)
                for r, b in zip(reqs, bonus)]
    proposal = runner.propose(dev_in[0], dev_in[1], dev_in[2])
    if spec.algorithm == "DFLASH":
        return [chain(ids, b) for ids, b in zip(proposal, bonus)]
    vals, ids = proposal
    return [pad_tree(*ddtree(v, i, spec.budget, b), T) for v, i, b in zip(vals, ids, bonus)]


def _tree_mask(parent, trees):
    R, T = parent.shape
    if T == 1:
        return torch.ones(R, 1, 1, dtype=torch.bool)
    return ancestor_mask(parent, max(max(tr[2]) for tr in trees))


def build_batch(runner, spec, trees, slots, seqs):
    """The verify ForwardBatch of R trees of T nodes (fields as SGLang names them).

    Built on the host, then moved in two copies (one integer tensor, one mask).
    """
    R, T = len(trees), spec.tokens_per_req
    tree = torch.tensor([tr[0] + tr[1] + tr[2] for tr in trees]).view(R, 3, T)
    tokens, parent, depth = tree.unbind(1)
    start, slot_t = torch.tensor(seqs)[:, None], torch.tensor(slots)
    ints = torch.cat([tokens.reshape(-1), (start + depth).reshape(-1),
                      (slot_t[:, None] * runner.slot_tokens + start + torch.arange(T)).reshape(-1),
                      slot_t, start[:, 0], torch.tensor([R * T])]).to(runner.device)
    n = R * T
    fb = ForwardBatch(batch_size=R, tokens_per_req=T, input_ids=ints[:n], positions=ints[n:2 * n],
                      out_cache_loc=ints[2 * n:3 * n], req_pool_indices=ints[3 * n:3 * n + R],
                      seq_lens=ints[3 * n + R:3 * n + 2 * R], num_token_non_padded=ints[-1],
                      custom_mask=_tree_mask(parent, trees).to(runner.device))
    return fb


def decode_step(runner, spec, reqs):
    """Advance each request by one verify: -> [(new tokens, accept length, draft tokens)], one
    per request (accept length = root + accepted drafts = tokens gained)."""
    S = runner.slot_tokens
    slots, seqs, bonus = [r.slot for r in reqs], [r.seq_len for r in reqs], [r.bonus for r in reqs]
    dev_in = torch.tensor([slots, seqs, bonus]).to(runner.device) if spec.uses_drafter else None
    trees = _trees(runner, spec, dev_in, bonus, reqs)
    fb = build_batch(runner, spec, trees, slots, seqs)
    target_ids = runner.forward_verify(fb, max(seqs), slots).tolist()
    out, src, dst = [], [], []
    for (tokens, parent, _), tgt, slot, seq in zip(trees, target_ids, slots, seqs):
        path, nxt = walk(tokens, parent, tgt)
        drafted = sum(1 for i, p in enumerate(parent) if p != i)  # real nodes (padding: own parent)
        out.append(([tokens[i] for i in path[1:]] + [nxt], len(path), drafted))
        base = slot * S + seq
        for j, node in enumerate(path):
            if node != j:
                src.append(base + node)
                dst.append(base + j)
    if src:
        runner.pool.move(*torch.tensor([src, dst]).to(runner.device))
    return out
